"""Why ÷√d_k: for unit-variance random q, k the measured Var(q·k) for each d_k (≈ d_k), and the max
weight and entropy of softmax rows over `n_keys` keys with and without ÷√d_k. With `text` (and a
model): the same statistics on that model's real scores at `layer`, per head, and the size of the
gradient through softmax, ‖∂softmax/∂scores‖ per row by autograd, with and without the divisor.

POST /api/lab/scaling: why ÷√d_k, on random vectors and (with a text) on a model's real scores."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from app import errors
from app.cache import LRU
from app.lab.common import Experiment, Uses, rounded, summary_of
from app.pipeline import Build, Context, Run
from app.request_checks import attention_layer
from app.schemas import Int, TextInput, TokenOut
from app.tokenizing import tokens_out
from lab import scaling

POWERS_OF_TWO = [4, 8, 16, 32, 64, 128, 256, 512, 1024]
MAX_SCALING_WORK = 1 << 25  # random numbers drawn for one variance curve: samples × Σ d_k × 2
MAX_SOFTMAX_WORK = 1 << 24  # products for the softmax rows: rows × n_keys × Σ d_k

_synthetic: LRU[dict[str, Any]] = LRU(64)  # random-vector curves by their parameters (cheap to keep)


class ScalingLabRequest(TextInput):
    """Why ÷√d_k: Var(q·k) grows with d_k, and an unscaled softmax saturates."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {}, {"d_k": [64, 512], "samples": 4096, "seed": 0},
        {"model": "tiny-gpt", "text": "我爱北京天安门广场。", "layer": 0},
    ]})

    text: str = Field("", description="With a model: that model's real scores on this text, per head. "
                                      "Empty: random vectors only.")
    d_k: list[Int] = Field(default_factory=lambda: list(POWERS_OF_TWO), min_length=1, max_length=12,
                           description="Key widths to measure, each 1 to 1024.")
    samples: Int = Field(4096, ge=16, le=8192, description="Random (q, k) pairs per d_k.")
    n_keys: Int = Field(32, ge=2, le=1024, description="Keys per softmax row.")
    rows: Int = Field(256, ge=1, le=1024, description="Softmax rows averaged per d_k.")
    seed: Int = Field(0, ge=0, le=2**31 - 1)
    layer: Int = Field(0, ge=0, description="The model's layer whose heads are measured.")


class SoftmaxRowsOut(BaseModel):
    """A softmax row's largest weight and its entropy, with and without the divisor: on random vectors (one value
    per d_k) and on a model's scores (one per head)."""

    max_scaled: list[float]
    max_unscaled: list[float]
    entropy_scaled: list[float]
    entropy_unscaled: list[float]


class HeadStats(SoftmaxRowsOut):
    layer: int
    d_head: int
    divisor: float = Field(description="What this layer divides Q·Kᵀ by: √d_head, times (layer + 1) in GPT-2 "
                                       "models with scale_attn_by_inverse_layer_idx.")
    stack: str | None
    var_raw: list[float] = Field(description="Variance of Q·Kᵀ over the visible cells, per head.")
    var_scaled: list[float] = Field(description="Variance of Q·Kᵀ / divisor, per head.")
    entropy_uniform: list[float] = Field(description="Mean ln(visible keys): a row spread evenly.")
    jacobian_scaled: list[float] = Field(description="Mean over query rows of ‖∂softmax/∂scores‖ (Frobenius, by "
                                                     "autograd), per head: the size of the gradient through softmax.")
    jacobian_unscaled: list[float] = Field(description="The same without the divisor: smaller where rows saturate.")
    jacobian_rows_scaled: list[list[float]] = Field(description="[head][q_pos] ‖∂softmax/∂scores‖ of each row.")
    jacobian_rows_unscaled: list[list[float]] = Field(description="[head][q_pos] the same without the divisor.")


class ScalingLabOut(SoftmaxRowsOut):
    d_k: list[int]
    samples: int
    n_keys: int
    variance: list[float] = Field(description="Measured Var(q·k) for unit-variance q, k: ≈ d_k.")
    scaled_variance: list[float] = Field(description="Var(q·k/√d_k): ≈ 1.")
    entropy_uniform: float = Field(description="ln(n_keys): the entropy of an even row.")
    model: str | None = None
    tokens: list[TokenOut] | None = None
    heads: HeadStats | None = None


def check(request: ScalingLabRequest) -> None:
    for d_k in request.d_k:
        if not 1 <= d_k <= 1024:
            raise errors.invalid_option("d_k", f"{errors.shown(d_k)} is outside 1 to 1024.")
    work = request.samples * sum(request.d_k) * 2
    if work > MAX_SCALING_WORK:
        raise errors.too_much_work("samples", work, MAX_SCALING_WORK, "random numbers (samples × Σ d_k × 2)")
    softmax_work = request.rows * request.n_keys * sum(request.d_k)
    if softmax_work > MAX_SOFTMAX_WORK:
        raise errors.too_much_work("rows", softmax_work, MAX_SOFTMAX_WORK, "multiplications (rows × n_keys × Σ d_k)")


def synthetic(request: ScalingLabRequest) -> dict[str, Any]:
    """The random-vector curves (cached by their parameters: a model's request reuses them)."""
    key = (tuple(request.d_k), request.samples, request.n_keys, request.rows, request.seed)
    if (cached := _synthetic.get(key)) is not None:
        return cached
    variance = scaling.qk_variance(request.d_k, request.samples, request.seed)
    sharp = scaling.softmax_sharpness(request.d_k, request.n_keys, request.rows, request.seed)
    out = {"d_k": list(request.d_k), "samples": request.samples, "n_keys": request.n_keys,
           **{k: rounded(v) for k, v in {**variance, **sharp}.items()},
           "entropy_uniform": round(scaling.uniform_entropy(request.n_keys), 6)}
    return _synthetic.put(key, out)


def plan(context: Context, request: ScalingLabRequest) -> Build:
    check(request)
    if not request.text:  # random vectors only
        return lambda _: {**synthetic(request), "model": None, "tokens": None, "heads": None}
    resolved = context.model
    where = attention_layer(resolved, request.layer, None)  # an encoder-decoder's: the encoder's
    stack = where.stack

    def build(run: Run) -> dict[str, Any]:
        forward = run.trace()
        raw = forward.trace[where.stage("scores_raw")][0]  # [head, q_pos, k_pos]
        scores = forward.trace[where.stage("attn_scores")][0]
        divisor = resolved.cfg.score_divisor(request.layer)
        stats = scaling.head_statistics(raw, scores, divisor)
        rows = {k: [rounded(row) for row in stats.pop(k)] for k in ("jacobian_rows_scaled", "jacobian_rows_unscaled")}
        heads = {"layer": request.layer, "d_head": resolved.cfg.d_head, "divisor": divisor, "stack": stack,
                 **{k: rounded(v) for k, v in stats.items()}, **rows}
        return {**synthetic(request), "model": resolved.name, "tokens": tokens_out(forward.tokens), "heads": heads}

    return build


def uses(request: ScalingLabRequest) -> Uses:
    """A text is read by a model; without one, only a named model is checked (it must exist)."""
    return "text" if request.text else "chosen_model"


EXPERIMENT = Experiment(
    name="scaling", method="POST", request=ScalingLabRequest, response=ScalingLabOut,
    plan=plan, uses=uses,
    summary=summary_of(__doc__),
)
