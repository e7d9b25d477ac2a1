"""Sampling: temperature, top-k and top-p applied to a next-token distribution; seeded draws.

The distributions and the draws are model/generate.py's (the one sampler); this experiment
sets every step of it side by side.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from model.generate import sampling_distributions, seeded_draws

__all__ = ["SamplingSteps", "entropy", "sampling_distributions", "sampling_steps", "seeded_draws"]


def entropy(probs: torch.Tensor) -> float:
    """Entropy in nats of a distribution [d_vocab]."""
    p = probs.double()
    return float(-(torch.where(p > 0, p * p.log(), torch.zeros_like(p))).sum())


@dataclass(frozen=True)
class SamplingSteps:
    steps: dict[str, torch.Tensor]  # original, tempered, top_k, final: [d_vocab] each
    order: list[int]  # the `show` most likely ids of the original distribution
    draws: list[int]  # seeded draws from the final distribution
    kept: dict[str, int]  # tokens with a non-zero probability after each step
    entropy: dict[str, float]  # nats, after each step


def sampling_steps(logits: torch.Tensor, *, temperature: float, top_k: int | None, top_p: float | None,
                   show: int, draws: int, seed: int) -> SamplingSteps:
    """Every step of the sampler on logits [d_vocab], the most likely tokens and `draws` draws with `seed`."""
    steps = sampling_distributions(logits, temperature, top_k, top_p)
    order = torch.argsort(steps["original"], descending=True)[:show].tolist()
    return SamplingSteps(steps, order, seeded_draws(steps["final"], draws, seed),
                         {name: int((p > 0).sum()) for name, p in steps.items()},
                         {name: entropy(p) for name, p in steps.items()})
