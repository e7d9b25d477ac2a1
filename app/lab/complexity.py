"""Time and peak memory of naive (n × n materialised) and tiled attention on random q, k, v at each
length, on the server's device, with power-law and n² fits. Lengths that would overrun a time budget
are skipped (listed with null times); the result is cached.

POST /api/lab/complexity: time and peak memory of naive against tiled attention, with the n² fits."""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from app import errors
from app.lab.common import Experiment, summary_of
from app.pipeline import Build, Context, Run
from app.schemas import INTEGER, Bool, Int
from lab.complexity import measure_complexity, naive_peak_bytes

Length = Annotated[int, Field(ge=1, le=4096), INTEGER]
COMPLEXITY_SECONDS = 5.0  # a length whose predicted time would pass this is skipped, not run
MAX_NAIVE_BYTES = 1 << 30  # the naive scores + softmax at the longest length
MAX_TILE_STEPS = 1 << 14  # Σ over lengths of (n / block)²: the tiled version's Python loop


class ComplexityLabRequest(BaseModel):
    """Time and peak memory of naive against tiled attention on random q, k, v, and the n² fits."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"lengths": [64, 128, 256, 512, 1024, 2048]}, {"lengths": [256, 1024, 4096], "d_model": 64, "n_heads": 1},
    ]})

    lengths: list[Length] = Field(default_factory=lambda: [64, 128, 256, 512, 1024, 2048], min_length=1,
                                  max_length=12, description="Sequence lengths, each 1 to 4096.")
    d_model: Int = Field(64, ge=1, le=1024, description="Split into n_heads heads of d_model / n_heads (≤ 256).")
    n_heads: Int = Field(1, ge=1, le=16)
    block: Int = Field(128, ge=16, le=4096, description="Tile size of the tiled version (block_q = block_k).")
    causal: Bool = Field(True, description="A decoder's mask: the tiled version skips tiles wholly in the future.")


class FitOut(BaseModel):
    exponent: float = Field(description="b in y = a·n^b (least squares on log-log axes): 2 for quadratic cost.")
    coefficient: float
    quadratic_coefficient: float = Field(description="c in y ≈ c·n² (least squares through the origin).")
    r_squared: float = Field(description="Of the c·n² fit.")


class MeasurementOut(BaseModel):
    n: int
    naive_seconds: float | None = Field(description="None: skipped, it would have overrun the time budget.")
    tiled_seconds: float | None
    naive_peak_bytes: int
    tiled_peak_bytes: int
    n_squared_bytes: int


class ComplexityLabOut(BaseModel):
    device: str
    memory_source: str = Field(description="'cuda allocator' (measured) or 'counted' (the intermediates held).")
    d_head: int
    n_heads: int
    block: int
    causal: bool
    budget_seconds: float
    measurements: list[MeasurementOut]
    naive_fit: FitOut | None
    tiled_fit: FitOut | None
    naive_memory_fit: FitOut | None
    tiled_memory_fit: FitOut | None


def check(request: ComplexityLabRequest) -> int:
    """d_head, once the sizes split and the work fits."""
    if request.d_model % request.n_heads:
        raise errors.invalid_option("n_heads", f"d_model {request.d_model} does not split into "
                                               f"{request.n_heads} equal heads.")
    d_head = request.d_model // request.n_heads
    if d_head > 256:
        raise errors.invalid_option("d_model", f"d_model / n_heads = {d_head}; at most 256 per head.")
    longest = max(request.lengths)
    held = naive_peak_bytes(longest, request.n_heads, 4)
    if held > MAX_NAIVE_BYTES:
        raise errors.too_much_work("lengths", held, MAX_NAIVE_BYTES,
                                   "bytes of naive scores (2 · n_heads · n² · 4 at the longest length)")
    steps = sum(math.ceil(n / request.block) ** 2 for n in set(request.lengths))
    if steps > MAX_TILE_STEPS:
        raise errors.too_much_work("block", steps, MAX_TILE_STEPS, "tiles (Σ (n / block)² over the lengths)")
    return d_head


def plan(context: Context, request: ComplexityLabRequest) -> Build:
    d_head = check(request)

    def build(_: Run) -> dict[str, Any]:
        report = measure_complexity(request.lengths, d_head=d_head, n_heads=request.n_heads, block=request.block,
                                    causal=request.causal, budget_seconds=COMPLEXITY_SECONDS, device=context.device)
        return {**asdict(report), "causal": request.causal, "budget_seconds": COMPLEXITY_SECONDS}

    return build


EXPERIMENT = Experiment(
    name="complexity", method="POST", request=ComplexityLabRequest, response=ComplexityLabOut,
    plan=plan, uses="nothing", measured=True,
    summary=summary_of(__doc__),
)
