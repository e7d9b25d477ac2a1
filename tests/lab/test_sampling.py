"""lab/sampling.py: temperature, top-k and top-p step by step, and seeded draws that repeat."""

from __future__ import annotations

import pytest
import torch

from lab import sampling


def test_sampling_steps() -> None:
    logits = torch.randn(100, generator=torch.Generator().manual_seed(0)) * 3
    plain = sampling.sampling_distributions(logits, 1.0, None, None)
    torch.testing.assert_close(plain["final"], torch.softmax(logits.double(), -1))
    hot = sampling.sampling_distributions(logits, 2.0, None, None)
    cold = sampling.sampling_distributions(logits, 0.5, None, None)
    assert sampling.entropy(cold["final"]) < sampling.entropy(plain["final"]) < sampling.entropy(hot["final"])
    out = sampling.sampling_distributions(logits, 1.0, 10, 0.6)
    assert int((out["top_k"] > 0).sum()) == 10 and float(out["top_k"].sum()) == pytest.approx(1.0)
    kept = out["final"] > 0
    mass = float(out["top_k"][kept].sum())
    smallest = float(out["top_k"][kept].min())
    assert mass >= 0.6 and mass - smallest < 0.6  # the smallest set that reaches p
    assert float(out["final"].sum()) == pytest.approx(1.0)


def test_seeded_draws_repeat() -> None:
    probs = torch.softmax(torch.randn(50, generator=torch.Generator().manual_seed(1)), -1)
    assert sampling.seeded_draws(probs, 30, 7) == sampling.seeded_draws(probs, 30, 7)
    assert sampling.seeded_draws(probs, 30, 7) != sampling.seeded_draws(probs, 30, 8)
