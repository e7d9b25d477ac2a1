"""GET /api/positional-encoding: the position information each scheme adds, from model/positional.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from analysis import readouts
from app import errors
from app.resolve import Resolved
from app.schemas import PositionalQuery
from app.tensors import encode_tensor
from model.positional import KINDS

DIMS = {
    "table": ("pos", "d_model"), "angles": ("pos", "pair"), "cos": ("pos", "pair"), "sin": ("pos", "pair"),
    "rotated": ("pos", "d_head"), "slopes": ("head",), "bias": ("head", "q_pos", "k_pos"),
}


def kinds() -> list[dict[str, object]]:
    return [kind.to_dict() for kind in KINDS.values()]


def plan(query: PositionalQuery, resolved: Resolved | None) -> Callable[[], dict[str, Any]]:
    """Sizes from the query, else from the model, else small defaults; checked before any work."""
    cfg = resolved.cfg if resolved is not None else None
    kind = query.kind or (cfg.pos_encoding if cfg is not None and cfg.pos_encoding != "none" else "sinusoidal")
    if kind == "learned" and resolved is not None and cfg is not None and cfg.pos_encoding == "learned":
        if query.length > cfg.n_ctx:  # a learned table has n_ctx rows and no formula past them
            raise errors.beyond_context(resolved.name, query.length, cfg.n_ctx)
        if query.d_model not in (None, cfg.d_model):
            raise errors.conflicting_fields(
                f"The learned table of '{resolved.name}' has d_model {cfg.d_model}, not {query.d_model}: "
                "leave d_model out to read it.")
    d_model = query.d_model or (cfg.d_model if cfg else 64)
    n_heads = query.n_heads or (cfg.n_heads if cfg else 4)
    base = query.base or (cfg.rope_base if cfg else 10000.0)
    tensors = compute(kind, query.length, d_model, n_heads, base, query.causal, resolved)

    def serialize() -> dict[str, Any]:
        encoded = {k: encode_tensor(k, v, DIMS[k], query.encoding, query.dtype) for k, v in tensors.items()}
        return {"kind": kind, "model": resolved.name if resolved else None, "length": query.length,
                "d_model": d_model, "n_heads": n_heads, "d_head": d_model // n_heads,
                "base": base if kind == "rope" else None, "tensors": encoded}

    return serialize


def compute(kind: str, length: int, d_model: int, n_heads: int, base: float, causal: bool,
            resolved: Resolved | None) -> dict[str, torch.Tensor]:
    if kind == "sinusoidal":
        if d_model % 2:
            raise errors.conflicting_fields("The sinusoidal table needs an even d_model.")
        return readouts.sinusoidal(length, d_model)
    if kind == "learned":
        if resolved is None or resolved.cfg.pos_encoding != "learned":
            raise errors.not_in_model(
                "A learned table belongs to a trained model: pass `model` naming one with learned positions.")
        return readouts.learned_positions(resolved.model, length)
    if d_model % n_heads:
        raise errors.conflicting_fields(f"d_model ({d_model}) must be divisible by n_heads ({n_heads}).")
    if kind == "rope":
        if (d_model // n_heads) % 2:
            raise errors.conflicting_fields("RoPE rotates pairs of dimensions: d_model / n_heads must be even.")
        return readouts.rope(length, d_model // n_heads, base)
    return readouts.alibi(n_heads, length, causal)
