"""lab/positions.py: RoPE's scores depend only on the offset, its pair turns on a unit circle, and sinusoidal
similarity falls with distance."""

from __future__ import annotations

import math

import pytest
import torch

from lab import positions
from model.positional import rope_angles


def test_rope_scores_depend_only_on_the_offset() -> None:
    out = positions.rope_relative_scores(length=128, d_head=64, base=10000.0, seed=0)
    assert out["max_spread"] < 1e-5
    assert max(out["by_offset"]) - min(out["by_offset"]) > 0.5  # yet different offsets differ
    assert out["scores"][0, 0] == pytest.approx(out["plain"], abs=1e-9)  # offset 0: no rotation at all
    wide = rope_angles(64, 16, 10000.0, torch.float64).float()
    torch.testing.assert_close(wide, rope_angles(64, 16), rtol=1e-5, atol=1e-4)


def test_rope_pair_turns_on_a_unit_circle() -> None:
    pts = positions.rope_pair(32, 16, 10000.0, pair=0)["points"]
    torch.testing.assert_close(pts.norm(dim=-1), torch.ones(32))
    assert float(pts[1, 1]) == pytest.approx(math.sin(1.0), abs=1e-6)  # pair 0 turns 1 radian per position


def test_sinusoidal_similarity_falls_with_distance() -> None:
    out = positions.sinusoidal_similarity(64, 64)
    near = out["by_distance"]
    assert near[0] == pytest.approx(32.0)  # PE·PE = Σ sin² + cos² = d_model / 2
    assert near[0] > near[1] > near[2] > near[4] > near[8]
