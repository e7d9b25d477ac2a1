"""Sampling: temperature, top-k and top-p applied to a next-token distribution; seeded draws.
"""

from __future__ import annotations

import torch

from model.generate import sampling_distributions, seeded_draws

__all__ = ["entropy", "sampling_distributions", "seeded_draws"]


def entropy(probs: torch.Tensor) -> float:
    """Entropy in nats of a distribution [d_vocab]."""
    p = probs.double()
    return float(-(torch.where(p > 0, p * p.log(), torch.zeros_like(p))).sum())
