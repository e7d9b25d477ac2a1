"""What each endpoint answers, read from a cached trace.

Every module here has `plan(resolved, request)`: it checks the request against the model
(a bad layer or stage name costs no forward pass) and returns a builder that turns the
recorded run into the JSON body (run in the engine's pool). Tensor math lives in
`model.readouts`; these modules only pick, slice and serialize.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.engine import TraceRun

Builder = Callable[[TraceRun], dict[str, Any]]
