"""What each endpoint answers, read from a cached trace.

Every module here has `plan(resolved, request)`: it checks the request against the model
(a bad layer or stage name costs no forward pass) and returns a builder that turns the
recorded run into the JSON body (run in the engine's pool). Tensor math lives in
`analysis.readouts`; these modules only pick, slice and serialize.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch

from app import errors
from app.inference_pool import TraceRun

Builder = Callable[[TraceRun], dict[str, Any]]


@dataclass(frozen=True)
class Budget:
    """How many numbers one answer may hold (settings.max_response_cells)."""

    max_cells: int

    def check(self, tensors: Iterable[torch.Tensor]) -> None:
        """Before serializing: refuse an answer over the budget, naming the limit and the filters."""
        cells = sum(t.numel() for t in tensors)
        if cells > self.max_cells:
            raise errors.response_too_large(cells, self.max_cells)
