"""The one LR schedule reproduces both schedules it replaced (values computed from the old code)."""

from __future__ import annotations

import pytest

from training.schedule import learning_rate

# the language model's old lr_at(step - 1): lr 3e-3, warmup 200, 8000 steps, cosine to 10% (step 1-based here)
OLD_LANGUAGE_MODEL = [
    (1, 1.5e-05),
    (100, 0.0015),
    (200, 0.003),
    (201, 0.003),
    (202, 0.0029999998904999526),
    (4101, 0.0016500000000000002),
    (8000, 0.0003000001095000473),
]
# the translator's old inline schedule: lr 1.5e-3, warmup 300, 2500 steps, cosine to 5%
OLD_TRANSLATOR = [
    (1, 5e-06),
    (150, 0.00075),
    (299, 0.001495),
    (300, 0.0015),
    (301, 0.001499999273544221),
    (1400, 0.0007875),
    (2500, 7.500000000000001e-05),
]


@pytest.mark.parametrize(("step", "expected"), OLD_LANGUAGE_MODEL)
def test_reproduces_the_language_model_schedule(step: int, expected: float) -> None:
    got = learning_rate(step, peak=3e-3, warmup=200, total=8000, floor=0.1, decay_delay=1)
    assert got == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(("step", "expected"), OLD_TRANSLATOR)
def test_reproduces_the_translator_schedule(step: int, expected: float) -> None:
    assert learning_rate(step, peak=1.5e-3, warmup=300, total=2500, floor=0.05) == pytest.approx(expected, rel=1e-12)


def test_without_warmup_the_cosine_runs_from_the_peak_to_the_floor() -> None:
    assert learning_rate(1, peak=1.0, warmup=0, total=10, floor=0.1, decay_delay=1) == pytest.approx(1.0)
    assert learning_rate(11, peak=1.0, warmup=0, total=10, floor=0.1, decay_delay=1) == pytest.approx(0.1)
    assert learning_rate(10, peak=1.0, warmup=0, total=10, floor=0.1) == pytest.approx(0.1)
