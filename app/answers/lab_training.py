"""POST /api/lab/norm-placement: Pre-LN against Post-LN, trained here (the one place app/ reaches training/).

The experiment needs an optimizer, which model/ never imports, so it lives in
lab/norm_placement.py. It is imported lazily, inside the builder: the server starts
without it and only this endpoint's first request loads it. The work is bounded before it
starts (every field's range in the schema, their product here); the service caches results.
"""

from __future__ import annotations

import math
from typing import Any

from app import errors
from app.schemas_lab2 import NormPlacementLabRequest

MAX_WORK = 1 << 22  # batch · seq_len · (steps + 1) · n_layers · d_model: ~4 s on two busy CPU cores


def work_of(request: NormPlacementLabRequest) -> int:
    return request.batch * request.seq_len * (request.steps + 1) * request.n_layers * request.d_model


def check_norm_placement(request: NormPlacementLabRequest) -> None:
    if request.d_model % request.n_heads:
        raise errors.invalid_option("n_heads", f"d_model {request.d_model} does not split into "
                                               f"{request.n_heads} equal heads.")
    work = work_of(request)
    if work > MAX_WORK:
        raise errors.too_much_work("steps", work, MAX_WORK,
                                   "units of work (batch · seq_len · (steps + 1) · n_layers · d_model)")


def build_norm_placement(request: NormPlacementLabRequest) -> dict[str, Any]:
    from lab import norm_placement  # lazy: see the module docstring

    settings = norm_placement.NormPlacementSettings(
        n_layers=request.n_layers, d_model=request.d_model, n_heads=request.n_heads, seq_len=request.seq_len,
        batch=request.batch, steps=request.steps, lr=request.lr, seed=request.seed)
    corpus = norm_placement.CORPUS
    shared = corpus.is_dir() and any(corpus.glob("*.txt"))
    source = "the shared English corpus" if shared else "a built-in English paragraph"
    result = norm_placement.compare_norm_placement(settings)
    runs: dict[str, Any] = result["runs"]  # type: ignore[assignment]
    for run in runs.values():  # a bottom third with no gradient at all has no finite ratio
        run["growth"] = run["growth"] if math.isfinite(run["growth"]) else None
    return {"settings": result["settings"], "pre": runs["pre"], "post": runs["post"], "source": source}
