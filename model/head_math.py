"""Small functions on each head's numbers, shared by the attention layer (model/layers.py) and the lab's own
re-computations: Gemma's soft cap and the RMSNorm of one head's vector (Qwen3's and Gemma's q/k norm, Gemma 4's v
norm)."""

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
