"""Pre-LN and Post-LN models from one seed: every block's gradient norm at initialisation and the loss
over the first Adam steps without warm-up (bounded, cached, deterministic for a seed).

POST /api/lab/norm-placement: Pre-LN against Post-LN, trained here (the one place app/ reaches an optimizer).

The experiment needs an optimizer, which model/ never imports, so it lives in lab/norm_placement.py.
It is imported lazily, inside the build: the server starts without it and only this endpoint's
first request loads it. The work is bounded before it starts (every field's range in the schema,
their product here); the service keeps the results (a measured experiment).
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from app import errors
from app.lab.common import Experiment, summary_of
from app.pipeline import Build, Context
from app.schemas import Float, Int

MAX_WORK = 1 << 22  # batch · seq_len · (steps + 1) · n_layers · d_model: ~4 s on two busy CPU cores


class NormPlacementLabRequest(BaseModel):
    """Two models from one seed that differ only in where the norm sits (trained here, so bounded and cached)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"n_layers": 12, "d_model": 64, "seed": 0}, {"n_layers": 6, "d_model": 64, "steps": 0, "seed": 1},
    ]})

    n_layers: Int = Field(12, ge=1, le=24)
    d_model: Int = Field(64, ge=8, le=256)
    n_heads: Int = Field(4, ge=1, le=16, description="Must divide d_model.")
    steps: Int = Field(8, ge=0, le=500, description="Adam steps at a constant learning rate, no warm-up.")
    batch: Int = Field(8, ge=1, le=64, description="Windows of text per step.")
    seq_len: Int = Field(64, ge=8, le=256, description="Bytes per window.")
    lr: Float = Field(1e-3, gt=0, le=0.1, description="Learning rate (the same for both).")
    seed: Int = Field(0, ge=0, le=2**31 - 1, description="Same seed, same weights, batches and numbers.")


class PlacementOut(BaseModel):
    placement: str
    ffn_out_grad_norms: list[float] = Field(description="‖∂L/∂W_out‖ of each block's FFN at init, input to output.")
    block_grad_norms: list[float] = Field(description="‖∂L/∂θ‖ over each block's weights at init.")
    growth: float | None = Field(description="Mean FFN gradient norm of the top third of blocks / the bottom third.")
    losses: list[float]


class NormPlacementLabOut(BaseModel):
    settings: dict[str, Any]
    pre: PlacementOut
    post: PlacementOut
    source: str = Field(description="What the batches were read from.")


def work_of(request: NormPlacementLabRequest) -> int:
    return request.batch * request.seq_len * (request.steps + 1) * request.n_layers * request.d_model


def check(request: NormPlacementLabRequest) -> None:
    if request.d_model % request.n_heads:
        raise errors.invalid_option("n_heads", f"d_model {request.d_model} does not split into "
                                               f"{request.n_heads} equal heads.")
    work = work_of(request)
    if work > MAX_WORK:
        raise errors.too_much_work("steps", work, MAX_WORK,
                                   "units of work (batch · seq_len · (steps + 1) · n_layers · d_model)")


def plan(_: Context, request: NormPlacementLabRequest) -> Build:
    check(request)
    return lambda _: build(request)


def build(request: NormPlacementLabRequest) -> dict[str, Any]:
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


EXPERIMENT = Experiment(
    name="norm_placement", method="POST", request=NormPlacementLabRequest,
    response=NormPlacementLabOut, plan=plan, aliases=("norms",), uses="nothing", measured=True,
    summary=summary_of(__doc__),
)
