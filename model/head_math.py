"""Small functions on each head's numbers, shared by the attention layer (model/layers.py) and the lab's own
re-computations: the grouped score and mixing products, the mask, Gemma's soft cap and the RMSNorm of one head's
vector (Qwen3's and Gemma's q/k norm, Gemma 4's v norm)."""

from __future__ import annotations

import torch


def soft_cap(x: torch.Tensor, cap: float) -> torch.Tensor:
    """cap · tanh(x / cap): about x while |x| is small against cap, never beyond ±cap (Gemma 2's soft-capping)."""
    return torch.tanh(x / cap) * cap


def rms_per_head(x: torch.Tensor, w: torch.Tensor | None, eps: float) -> torch.Tensor:
    """x / sqrt(mean over d_head of x^2 + eps) * w: RMSNorm of each head's vector alone.

    x: [batch, pos, head, d_head]; w: [d_head], shared by the heads; None: no gain (Gemma 4's v norm)."""
    normed = x / (x.pow(2).mean(-1, keepdim=True) + eps).sqrt()
    return normed if w is None else normed * w


def grouped_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """q [batch, q_pos, head, d_head] · k [batch, k_pos, kv_head, d_head] -> [batch, head, q_pos, k_pos].

    Each query head reads its group's key head (GQA; group 1 for MHA): a group's query heads are stacked as one
    taller matrix, [batch, kv_head, (head, q_pos), d_head], so K is read in place rather than copied per head."""
    batch, q_len, n_heads, d_head = q.shape
    k_len, kv_heads = k.shape[1], k.shape[2]
    q_grouped = q.transpose(1, 2).reshape(batch, kv_heads, n_heads // kv_heads * q_len, d_head)
    return (q_grouped @ k.permute(0, 2, 3, 1)).view(batch, n_heads, q_len, k_len)


def grouped_mix(pattern: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """pattern [batch, head, q_pos, k_pos] · v [batch, k_pos, kv_head, d_head] -> z [batch, q_pos, head, d_head],
    grouped as in grouped_scores (V read in place)."""
    batch, n_heads, q_len, k_len = pattern.shape
    kv_heads, d_head = v.shape[2], v.shape[3]
    z = pattern.reshape(batch, kv_heads, n_heads // kv_heads * q_len, k_len) @ v.transpose(1, 2)
    return z.view(batch, n_heads, q_len, d_head).transpose(1, 2)


def masked(scores: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """-inf where a query may not see a key (allowed: bool, broadcast to scores [batch, head, q_pos, k_pos]).
    where() rather than masked_fill(~allowed): one pass over the scores instead of a copy and a fill."""
    return torch.where(allowed, scores, float("-inf"))


def blind_rows(allowed: torch.Tensor) -> torch.Tensor | None:
    """The queries that see no key at all (a padded query in a batch), [batch|1, 1, q_pos, 1], or None when every
    query sees one (any causal mask without padding). Shaped to broadcast over the mask's q_pos.

    Worked out once per mask and kept on it: a forward pass hands the same mask to every layer, and checking it in
    each cost an `any` and a fill per layer (~0.5 % of SmolLM2's forward)."""
    found = allowed.__dict__.get("blind_rows", allowed)
    if found is allowed:  # not worked out yet (a mask is never its own answer)
        blind = ~allowed.any(dim=-1, keepdim=True)
        found = blind if bool(blind.any()) else None
        allowed.__dict__["blind_rows"] = found  # masks are never changed in place, so the answer stays true
    return found
