"""POST /api/lab/positions and /parameters: experiments on formulas and configs, no text needed.

The numbers come from model/lab.py; this module checks the options, picks and serializes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from analysis import readouts
from app import errors
from app.answers import Budget
from app.resolve import Resolved
from app.schemas_lab import PositionsLabRequest
from app.tensors import encode_tensor
from lab import parameters, positions


def plan_positions(request: PositionsLabRequest, resolved: Resolved | None,
                   budget: Budget) -> Callable[[], dict[str, Any]]:
    """Sizes from the request, else the model, else 64 wide with 4 heads; checked before any work."""
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
    learned = cfg is not None and cfg.pos_encoding == "learned"
    if learned and resolved is not None and length > resolved.cfg.n_ctx:
        raise errors.beyond_context(resolved.name, length, resolved.cfg.n_ctx)
    cells = length * d_model + 2 * length * length + n_heads * length * length + (
        length * (d_model + length) if learned else 0)
    if cells > budget.max_cells:
        raise errors.too_much_work("length", cells, budget.max_cells, "numbers in the answer")

    def build() -> dict[str, Any]:
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


def plan_parameters(resolved: Resolved) -> Callable[[], dict[str, Any]]:
    def build() -> dict[str, Any]:
        report = parameters.parameter_report(resolved.model)
        return {"model": resolved.name, "config": resolved.cfg.to_dict(), **report,
                "head_splits": parameters.head_splits(resolved.cfg), "kv_sharing": parameters.kv_sharing(resolved.cfg)}

    return build
