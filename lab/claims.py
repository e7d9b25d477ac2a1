"""Lesson claims read off a lab experiment's numbers, beside the ones read off the trace (analysis/claims.py).

A chapter that links a lab panel can check, on its own view, a number that panel shows: the gradient through
softmax with and without ÷√d_k (the scaling panel), FlashAttention's memory traffic against the standard
kernel's (the flash panel). Each kind calls the experiment's own function (lab/<name>.py), so the line in the
lesson bar and the panel print the same computation. `KINDS` is every kind a chapter may name: the trace's
and these.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from analysis import claims as trace_claims
from analysis.claims import Claim, ClaimError, View
from lab import scaling
from lab.flash import flash_traffic, standard_traffic

MIB = 2 ** 20


def softmax_gradient(view: View) -> Claim:
    """Without ÷√d_k the rows saturate and the gradient through softmax shrinks: ‖∂softmax/∂scores‖ per query
    row by autograd, the mean over the rows and the heads of the layer on screen, with and without the divisor
    (the scaling panel's "gradient through softmax" for this layer)."""
    raw = view.trace[view.at("scores_raw")][0]  # [head, q_pos, k_pos] Q·Kᵀ, undivided
    scores = view.trace[view.at("attn_scores")][0]  # the softmax input: scaled, biased, masked
    stats = scaling.head_statistics(raw, scores, view.model.cfg.score_divisor(view.layer))
    with_scale = sum(stats["jacobian_scaled"]) / len(stats["jacobian_scaled"])
    without = sum(stats["jacobian_unscaled"]) / len(stats["jacobian_unscaled"])
    return Claim("softmax_gradient", without < with_scale, {
        "with_scale": round(with_scale, 4), "without": round(without, 4),
        "ratio": round(with_scale / max(without, 1e-12), 1), "n_heads": len(stats["jacobian_scaled"])})


def flash_traffic_saves(view: View, n: int = 16384, block_q: int = 128, dtype_bytes: int = 2) -> Claim:
    """FlashAttention moves fewer bytes between main memory and the chip than the standard kernel, per head at
    n queries × n keys with this model's d_head (the flash panel's traffic curves, float16 by default)."""
    if n < 1 or block_q < 1 or dtype_bytes not in (2, 4):
        raise ClaimError("flash_traffic_saves needs n ≥ 1, block_q ≥ 1 and 2 or 4 bytes per number")
    d_head = view.model.cfg.d_head
    standard = standard_traffic(n, n, d_head).total * dtype_bytes
    tiled = flash_traffic(n, n, d_head, block_q).total * dtype_bytes
    return Claim("flash_traffic_saves", tiled < standard, {
        "n": n, "d_head": d_head, "block_q": block_q, "standard_mib": round(standard / MIB),
        "flash_mib": round(tiled / MIB), "ratio": round(standard / tiled, 1)})


KINDS: dict[str, Callable[..., Claim]] = {
    **trace_claims.KINDS,
    "softmax_gradient": softmax_gradient,
    "flash_traffic_saves": flash_traffic_saves,
}


def measure(view: View, claim: Mapping[str, Any]) -> Claim:
    """One claim of a chapter (`{"kind": ..., **its words}`) measured on its view, by whichever module owns it."""
    params = dict(claim)
    kind = params.pop("kind", None)
    if kind not in KINDS:
        raise ClaimError(f"unknown claim kind {kind!r}")
    return KINDS[kind](view, **params)
