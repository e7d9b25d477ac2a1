"""Sinusoidal PE and PE·PEᵀ; RoPE's rotation of one pair and q_m·k_n for random q, k (equal where
m − n is equal); ALiBi biases per head. Learned positions past the model's n_ctx: 422.

POST /api/lab/positions: sinusoidal, RoPE, ALiBi (and a model's learned table), alone or at a model's sizes."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from analysis import readouts
from app import errors
from app.lab.common import Experiment, summary_of
from app.pipeline import Build, Context, Run
from app.schemas import INTEGER, NUMBER, Encoding, Int, ModelChoice
from app.tensors import encode_tensor
from lab import positions


class PositionsLabRequest(ModelChoice):
    """Positional schemes on their own (no model) or at a model's sizes; `length` may pass its n_ctx."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"length": 32, "d_model": 64, "n_heads": 4},
        {"model": "tiny-gpt", "length": 64, "pair": 0},
    ]})

    length: Int = Field(32, ge=2, le=1024, description="Positions to compute (past the model's n_ctx too).")
    d_model: Annotated[int, Field(ge=2, le=1024), INTEGER] | None = Field(
        None, description="Default: the model's, else 64.")
    n_heads: Annotated[int, Field(ge=1, le=16), INTEGER] | None = Field(
        None, description="Default: the model's, else 4.")
    base: Annotated[float, Field(gt=1, le=1e7), NUMBER] | None = Field(
        None, description="RoPE base (theta). Default: the model's, else 10000.")
    pair: Int = Field(0, ge=0, le=512, description="The RoPE dimension pair (i, i + d_head/2) to draw.")
    seed: Int = Field(0, ge=0, le=2**31 - 1, description="Seed of the random q, k for the RoPE scores.")
    encoding: Encoding = "list"


class PositionsLabOut(BaseModel):
    model: str | None
    kind: str | None = Field(description="The model's own positional encoding, if a model was given.")
    n_ctx: int | None
    length: int
    beyond_context: bool = Field(description="length > n_ctx: only the formulas (sinusoidal, RoPE, ALiBi) go there.")
    d_model: int
    n_heads: int
    d_head: int
    base: float
    pair: int
    sinusoidal: dict[str, Any]
    rope: dict[str, Any]
    alibi: dict[str, Any]
    learned: dict[str, Any] | None


def plan(context: Context, request: PositionsLabRequest) -> Build:
    """Sizes from the request, else the model, else 64 wide with 4 heads; checked before any work."""
    resolved = context.resolved
    cfg = resolved.cfg if resolved is not None else None
    d_model = request.d_model or (cfg.d_model if cfg else 64)
    n_heads = request.n_heads or (cfg.n_heads if cfg else 4)
    base = request.base or (cfg.rope_base if cfg else 10000.0)
    length = request.length
    if d_model % 2:
        raise errors.invalid_option("d_model", f"{d_model} is odd: sinusoidal positions pair sin and cos.")
    if d_model % n_heads:
        raise errors.invalid_option("n_heads", f"d_model {d_model} does not split into {n_heads} equal heads.")
    d_head = d_model // n_heads
    if d_head % 2:
        raise errors.invalid_option("n_heads", f"d_head = {d_head} is odd: RoPE rotates pairs of dimensions.")
    if request.pair >= d_head // 2:
        raise errors.invalid_option("pair", f"{request.pair} does not exist: d_head {d_head} has pairs 0 to "
                                            f"{d_head // 2 - 1}.")
    learned = cfg is not None and cfg.positional.learned
    if learned and resolved is not None and length > resolved.cfg.n_ctx:
        raise errors.beyond_context(resolved.name, length, resolved.cfg.n_ctx)
    cells = length * d_model + 2 * length * length + n_heads * length * length + (
        length * (d_model + length) if learned else 0)
    if cells > context.budget.max_cells:
        raise errors.too_much_work("length", cells, context.budget.max_cells, "numbers in the answer")

    def build(_: Run) -> dict[str, Any]:
        enc = request.encoding

        def tensor(name: str, value: Any, dims: tuple[str, ...]) -> dict[str, Any]:
            return encode_tensor(name, value, dims, enc)

        sin = positions.sinusoidal_similarity(length, d_model)
        rope = positions.rope_relative_scores(length, d_head, base, request.seed)
        pair = positions.rope_pair(length, d_head, base, request.pair)
        alibi = readouts.alibi(n_heads, length, causal=cfg.causal if cfg else True)
        out: dict[str, Any] = {
            "model": resolved.name if resolved else None, "kind": cfg.pos_encoding if cfg else None,
            "n_ctx": cfg.n_ctx if cfg else None, "length": length,
            "beyond_context": cfg is not None and length > cfg.n_ctx,
            "d_model": d_model, "n_heads": n_heads, "d_head": d_head, "base": base, "pair": request.pair,
            "sinusoidal": {"table": tensor("table", sin["table"], ("pos", "d_model")),
                           "similarity": tensor("similarity", sin["similarity"], ("pos", "pos")),
                           "by_distance": [round(float(v), 4) for v in sin["by_distance"]]},
            "rope": {"points": pair["points"].tolist(), "angles": pair["angles"].tolist(),
                     "scores": tensor("scores", rope["scores"].float(), ("q_pos", "k_pos")),
                     "offsets": rope["offsets"], "by_offset": [round(v, 6) for v in rope["by_offset"]],
                     "spread": rope["spread"], "max_spread": rope["max_spread"], "plain": rope["plain"]},
            "alibi": {"slopes": alibi["slopes"].tolist(),
                      "bias": tensor("bias", alibi["bias"], ("head", "q_pos", "k_pos"))},
            "learned": None,
        }
        if learned and resolved is not None:
            table = readouts.learned_positions(resolved.model, length)["table"]
            sim = positions.similarity(table)
            out["learned"] = {"table": tensor("table", table, ("pos", "d_model")),
                              "similarity": tensor("similarity", sim["similarity"], ("pos", "pos")),
                              "by_distance": [round(float(v), 4) for v in sim["by_distance"]]}
        return out

    return build


EXPERIMENT = Experiment(
    name="positions", method="POST", request=PositionsLabRequest, response=PositionsLabOut,
    plan=plan, uses="chosen_model",
    summary=summary_of(__doc__),
)
