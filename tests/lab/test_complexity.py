"""The complexity measurement: shapes, bounds and the fit mechanics (no assertion on any timing)."""

from __future__ import annotations

import pytest

from lab.complexity import MAX_LENGTH, fit_power_law, measure_complexity, naive_peak_bytes, tiled_peak_bytes


def test_fit_recovers_a_known_power_law() -> None:
    ns = [64, 128, 256, 512, 1024]
    quadratic = fit_power_law(ns, [3e-9 * n * n for n in ns])
    assert quadratic.exponent == pytest.approx(2.0)
    assert quadratic.coefficient == pytest.approx(3e-9)
    assert quadratic.quadratic_coefficient == pytest.approx(3e-9)
    assert quadratic.r_squared == pytest.approx(1.0)
    other = fit_power_law(ns, [5.0 * n**1.5 for n in ns])
    assert other.exponent == pytest.approx(1.5) and other.coefficient == pytest.approx(5.0)
    assert other.r_squared < 1.0  # n^1.5 is not c · n²


def test_fit_refuses_what_cannot_be_fitted() -> None:
    for ns, ys in (([10], [1.0]), ([10, 10], [1.0, 2.0]), ([10, 20], [0.0, 1.0]), ([10, 20], [1.0])):
        with pytest.raises(ValueError):
            fit_power_law(ns, ys)


def test_measurement_shapes_and_counted_memory() -> None:
    report = measure_complexity([32, 16, 64], d_head=8, n_heads=2, block=16, repeats=1, budget_seconds=30)
    assert [m.n for m in report.measurements] == [16, 32, 64]
    assert report.memory_source == "counted" and report.device == "cpu"
    for m in report.measurements:
        assert m.naive_seconds is not None and m.naive_seconds > 0
        assert m.tiled_seconds is not None and m.tiled_seconds > 0
        assert m.naive_peak_bytes == naive_peak_bytes(m.n, 2, 4) == 2 * 2 * m.n * m.n * 4
        assert m.tiled_peak_bytes == tiled_peak_bytes(m.n, 2, 8, 16, 4)
        assert m.n_squared_bytes == m.n * m.n * 4
    assert report.naive_memory_fit is not None and report.naive_memory_fit.exponent == pytest.approx(2.0)
    assert report.tiled_memory_fit is not None and report.tiled_memory_fit.exponent == pytest.approx(0.0, abs=1e-9)
    assert report.naive_fit is not None and report.tiled_fit is not None  # fitted; their values are not asserted


def test_the_budget_skips_rather_than_runs() -> None:
    report = measure_complexity([8, 16, 4096], d_head=4, block=8, repeats=1, budget_seconds=0.0)
    first, *rest = report.measurements
    assert first.naive_seconds is not None
    assert all(m.naive_seconds is None and m.tiled_seconds is None for m in rest)
    assert rest[-1].naive_peak_bytes == naive_peak_bytes(4096, 1, 4)  # counted even when skipped
    assert report.naive_fit is None  # one point fits nothing


@pytest.mark.parametrize(
    "kwargs",
    [{"lengths": []}, {"lengths": [0]}, {"lengths": [MAX_LENGTH + 1]}, {"lengths": list(range(1, 20))},
     {"lengths": [8], "block": 0}, {"lengths": [8], "n_heads": 100}, {"lengths": [8], "repeats": 50}],
)
def test_bad_options_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        measure_complexity(**kwargs)  # type: ignore[arg-type]
