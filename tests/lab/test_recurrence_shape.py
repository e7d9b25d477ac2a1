"""lab/recurrence.py's curve_shape: a falling curve and a U are told apart by their numbers."""

from __future__ import annotations

import pytest

from lab.recurrence import curve_shape


def test_a_falling_curve_does_not_rise() -> None:
    shape = curve_shape([8.0, 4.0, 2.0, 1.0, 0.5, 0.25])
    assert shape is not None and not shape.rises
    assert (shape.near, shape.low, shape.low_at, shape.far_from, shape.far_to) == (8.0, 0.25, 6, 5, 6)
    assert shape.far == pytest.approx(0.375)


def test_a_u_rises() -> None:
    shape = curve_shape([8.0, 1.0, 0.4, 0.45, 0.5, 0.6, 1.0, 1.2, 1.1])
    assert shape is not None and shape.rises and shape.low_at == 3 and shape.far == pytest.approx(1.1)


def test_too_short_a_curve_has_no_shape() -> None:
    assert curve_shape([1.0, 0.5]) is None
