"""What each endpoint answers, read from a cached trace.

Every module here has `plan(resolved, request)`: it checks the request against the model
(a bad layer or stage name costs no forward pass) and returns a builder that turns the
recorded run into the JSON body (run in the engine's pool). Tensor math lives in
`analysis.readouts`; these modules only pick, slice and serialize. The checks they share with the
lab (stack, layer, heads, the work budget) are in app/request_checks.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.inference_pool import TraceRun

Builder = Callable[[TraceRun], dict[str, Any]]
