"""Positions: sinusoidal PE·PEᵀ falls with distance; RoPE scores depend on m − n only.
"""

from __future__ import annotations

from typing import Any

import torch

from model.positional import apply_rope, rope_angles, sinusoidal_table


def sinusoidal_similarity(length: int, d_model: int) -> dict[str, torch.Tensor]:
    """PE [pos, d_model], PE·PEᵀ [pos, pos], and the mean similarity at each distance [pos]."""
    table = sinusoidal_table(length, d_model)
    return {"table": table, **similarity(table)}


def similarity(table: torch.Tensor) -> dict[str, torch.Tensor]:
    """table [pos, d] -> {"similarity": table·tableᵀ [pos, pos], "by_distance": mean over |m − n| = d [pos]}."""
    sim = table.double() @ table.double().T  # [pos, pos]
    n = table.shape[0]
    by_distance = torch.stack([torch.diagonal(sim, offset=d).mean() for d in range(n)])
    return {"similarity": sim.float(), "by_distance": by_distance.float()}


def rope_pair(length: int, d_head: int, base: float, pair: int) -> dict[str, torch.Tensor]:
    """Dimension pair (i, i + d_head/2) of the vector (1, 0) rotated at each position.  [pos, 2], [pos]"""
    angles = rope_angles(length, d_head, base, torch.float64)[:, pair]  # [pos]
    return {"points": torch.stack([angles.cos(), angles.sin()], dim=-1).float(), "angles": angles.float()}


def rope_relative_scores(length: int, d_head: int, base: float, seed: int) -> dict[str, Any]:
    """For one random q and k: score[m, n] = RoPE(q, m) · RoPE(k, n), which depends on m − n only.

    Returns scores [m, n] and, per offset m − n, the spread (max − min) of the scores that share it.
    """
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(d_head, generator=generator, dtype=torch.float64)
    k = torch.randn(d_head, generator=generator, dtype=torch.float64)
    angles = rope_angles(length, d_head, base, torch.float64)  # [pos, pair]
    rq = apply_rope(q.expand(1, length, 1, d_head), angles)[0, :, 0]  # [pos, d_head]
    rk = apply_rope(k.expand(1, length, 1, d_head), angles)[0, :, 0]
    scores = rq @ rk.T  # [m, n]
    offsets = range(-(length - 1), length)
    spread = [float(torch.diagonal(scores, offset=-o).max() - torch.diagonal(scores, offset=-o).min())
              for o in offsets]
    by_offset = [float(torch.diagonal(scores, offset=-o).mean()) for o in offsets]
    return {"scores": scores, "offsets": list(offsets), "spread": spread, "by_offset": by_offset,
            "max_spread": max(spread), "plain": float(q @ k)}
