"""More heads are not always better: one layer's real queries and keys, re-split into h heads of d_k = width / h.

The traced q and k of a layer (after RoPE when the model rotates them: the vectors it actually dots;
GQA's K heads repeated for the query heads they serve) are concatenated over heads, width = heads · d_head,
and cut again into h heads for every h that divides the width. A head of width d_k makes a score
table q_h · k_hᵀ of rank ≤ min(q_pos, k_pos, d_k): once the sentence is longer than d_k, no head that
narrow can make every pattern. This re-splits the trained projections; it is not a model trained with h heads.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import torch

from model.hooks import AttentionLayer

RTOL = 1e-6  # numerical rank: singular values below RTOL × the largest count as zero (scores in float64)
MAX_RANK_WORK = 200_000_000  # rank_work's limit (the widths and lengths of SmolLM2-135M on 128 tokens fit)
PUBLISHED = (  # the seed's configurations (published, not measured here)
    {"name": "Llama 7B", "d_model": 4096, "n_heads": 32, "d_head": 128},
    {"name": "GPT-3 175B", "d_model": 12288, "n_heads": 96, "d_head": 128},
)


@dataclass(frozen=True)
class LayerQK:
    """One attention layer's traced vectors, concatenated over heads."""

    q: torch.Tensor  # [q_pos, head·d_head]
    k: torch.Tensor  # [k_pos, head·d_head] (GQA: each K/V head repeated for its query heads)
    allowed: torch.Tensor  # bool [q_pos, k_pos]: the model's mask (True: the query sees the key)
    scores_raw: torch.Tensor  # [head, q_pos, k_pos]: the model's own q·k, before any scale
    heads: int
    rotated: bool  # True: q and k after RoPE


@dataclass(frozen=True)
class Split:
    """The same width cut into `heads` heads of `d_k`."""

    heads: int
    d_k: int
    bound: int  # min(q_pos, k_pos, d_k): no head's score table can have a larger rank
    ranks: list[int]  # [head] numerical rank of q_h · k_hᵀ
    entropy: float  # mean over heads and visible rows of H(softmax(q_h·k_hᵀ/√d_k + mask)) in nats


def layer_qk(trace: Mapping[str, torch.Tensor], where: AttentionLayer) -> LayerQK:
    """The q and k the layer dotted (batch 0 of the trace), each head side by side."""
    rotated = where.stage("rot_q") in trace
    q = trace[where.stage("rot_q" if rotated else "q")][0]  # [q_pos, head, d_head]
    k = trace[where.stage("rot_k" if rotated else "k")][0]  # [k_pos, kv_head, d_head]
    heads = q.shape[1]
    k = k.repeat_interleave(heads // k.shape[1], dim=1)  # [k_pos, head, d_head], as the model does
    allowed = torch.isfinite(trace[where.stage("attn_scores")][0, 0])  # [q_pos, k_pos]; -inf: hidden
    return LayerQK(q.reshape(q.shape[0], -1), k.reshape(k.shape[0], -1), allowed,
                   trace[where.stage("scores_raw")][0], heads, rotated)


def divisors(width: int) -> list[int]:
    return [h for h in range(1, width + 1) if width % h == 0]


def rank_work(width: int, q_pos: int, k_pos: int) -> int:
    """What finding every split's ranks costs, about (compared with MAX_RANK_WORK before any is run):
    per head m²·(q_pos + k_pos) with m = min(q_pos, k_pos, d_k), the size of the matrix whose SVD is taken."""
    return sum(h * min(q_pos, k_pos, width // h) ** 2 * (q_pos + k_pos) for h in divisors(width))


def split_scores(q: torch.Tensor, k: torch.Tensor, heads: int) -> torch.Tensor:
    """q: [q_pos, width], k: [k_pos, width] -> q_h · k_hᵀ for `heads` heads of width / heads: [head, q_pos, k_pos]."""
    d_k = q.shape[1] // heads
    q_h = q.double().view(q.shape[0], heads, d_k)  # [q_pos, head, d_k]
    k_h = k.double().view(k.shape[0], heads, d_k)  # [k_pos, head, d_k]
    return torch.einsum("qhd,khd->hqk", q_h, k_h)


def score_core(q: torch.Tensor, k: torch.Tensor, heads: int) -> torch.Tensor:
    """A matrix with the same singular values as each head's q_h · k_hᵀ, at most d_k × d_k: [head, m, m].

    q_h = U_q·R_q and k_h = U_k·R_k (QR, U with orthonormal columns), so q_h·k_hᵀ = U_q·(R_q·R_kᵀ)·U_kᵀ
    has the singular values of R_q·R_kᵀ. Used when d_k is below both lengths; otherwise the scores themselves.
    """
    d_k = q.shape[1] // heads
    if d_k >= min(q.shape[0], k.shape[0]):
        return split_scores(q, k, heads)
    r_q = torch.linalg.qr(q.double().view(q.shape[0], heads, d_k).transpose(0, 1), mode="r").R  # [head, d_k, d_k]
    r_k = torch.linalg.qr(k.double().view(k.shape[0], heads, d_k).transpose(0, 1), mode="r").R
    return r_q @ r_k.transpose(1, 2)


def row_entropy(scores: torch.Tensor, allowed: torch.Tensor, d_k: int) -> torch.Tensor:
    """scores [head, q_pos, k_pos] -> each visible row's entropy of softmax(scores/√d_k + mask) in nats [head, row]."""
    seen = allowed.any(-1)  # [q_pos]: rows with a visible key
    logits = (scores / math.sqrt(d_k)).masked_fill(~allowed, float("-inf"))[:, seen]  # [head, row, k_pos]
    logp = torch.log_softmax(logits, dim=-1)
    return -(logp.exp() * logp.nan_to_num(neginf=0.0)).sum(-1)


def uniform_entropy(allowed: torch.Tensor) -> float:
    """The most a row can have: ln(keys visible), averaged over the visible rows (a formula, not a measurement)."""
    visible = allowed.sum(-1)
    return float(torch.log(visible[visible > 0].double()).mean())


def splits(qk: LayerQK) -> list[Split]:
    """Every h dividing the width, fewest heads first."""
    width, q_pos, k_pos = qk.q.shape[1], qk.q.shape[0], qk.k.shape[0]
    out = []
    for heads in divisors(width):
        d_k = width // heads
        scores = split_scores(qk.q, qk.k, heads)  # [head, q_pos, k_pos]
        ranks = torch.linalg.matrix_rank(score_core(qk.q, qk.k, heads), rtol=RTOL)  # [head]: the scores' ranks
        out.append(Split(heads, d_k, min(q_pos, k_pos, d_k), [int(r) for r in ranks],
                         float(row_entropy(scores, qk.allowed, d_k).mean())))
    return out


def own_split_diff(qk: LayerQK) -> float:
    """max |re-split at the model's own head count − the model's own traced q·k|: 0 up to float32 rounding."""
    return float((split_scores(qk.q, qk.k, qk.heads) - qk.scores_raw.double()).abs().max())
