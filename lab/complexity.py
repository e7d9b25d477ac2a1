"""What attention costs against sequence length: time and peak memory, naive against tiled, and the n² fit.

Naive attention materialises the [head, q_pos, k_pos] scores and their softmax: n² memory and
n² time. The tiled version (lab/flash.py) does the same n² work but only ever holds one
block_q × block_k tile. Both are measured here on random q, k, v; the fits say how the cost grows:

    power law:  log t = log a + b · log n   (least squares; b ≈ 2 for quadratic cost)
    quadratic:  t ≈ c · n²                 (least squares through the origin: c = Σ t·n² / Σ n⁴)

Peak memory comes from the CUDA allocator on a GPU; on a CPU, where PyTorch keeps no such
counter, it is the bytes of the intermediates each method holds at once (counted, not sampled).
The work per call is bounded: at most MAX_LENGTHS lengths up to MAX_LENGTH, and a length whose
predicted time would overrun the budget is skipped, not run (the shortest always runs).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

import torch

from lab.flash import flash_attention, naive_attention

MAX_LENGTH = 4096
MAX_LENGTHS = 12


@dataclass(frozen=True)
class Measurement:
    n: int
    naive_seconds: float | None  # None: skipped to stay within the budget
    tiled_seconds: float | None
    naive_peak_bytes: int
    tiled_peak_bytes: int
    n_squared_bytes: int  # one head's n × n float matrix, for scale


@dataclass(frozen=True)
class Fit:
    exponent: float  # b in t = a · n^b
    coefficient: float  # a
    quadratic_coefficient: float  # c in t ≈ c · n²
    r_squared: float  # of the quadratic fit


@dataclass
class ComplexityReport:
    device: str
    memory_source: str  # "cuda allocator" or "counted"
    d_head: int
    n_heads: int
    block: int
    measurements: list[Measurement] = field(default_factory=list)
    naive_fit: Fit | None = None
    tiled_fit: Fit | None = None
    naive_memory_fit: Fit | None = None
    tiled_memory_fit: Fit | None = None


def fit_power_law(ns: Sequence[float], ys: Sequence[float]) -> Fit:
    """Least squares of log y on log n (the exponent) and of y on n² through the origin."""
    if len(ns) != len(ys) or len(ns) < 2:
        raise ValueError("a fit needs at least two (n, y) pairs")
    if min(ns) <= 0 or min(ys) <= 0:
        raise ValueError("n and y must be positive to fit on log-log axes")
    x = [math.log(n) for n in ns]
    y = [math.log(v) for v in ys]
    x_mean, y_mean = sum(x) / len(x), sum(y) / len(y)
    sxx = sum((xi - x_mean) ** 2 for xi in x)
    if sxx == 0:
        raise ValueError("a fit needs at least two different lengths")
    exponent = sum((xi - x_mean) * (yi - y_mean) for xi, yi in zip(x, y, strict=True)) / sxx
    coefficient = math.exp(y_mean - exponent * x_mean)
    n2 = [n * n for n in ns]
    c = sum(v * s for v, s in zip(ys, n2, strict=True)) / sum(s * s for s in n2)
    residual = sum((v - c * s) ** 2 for v, s in zip(ys, n2, strict=True))
    spread = sum((v - sum(ys) / len(ys)) ** 2 for v in ys)
    r_squared = 1.0 - residual / spread if spread > 0 else 1.0
    return Fit(exponent, coefficient, c, r_squared)


def naive_peak_bytes(n: int, n_heads: int, element: int) -> int:
    """Scores and their softmax are alive together: 2 · head · n² values."""
    return 2 * n_heads * n * n * element


def tiled_peak_bytes(n: int, n_heads: int, d_head: int, block: int, element: int) -> int:
    """One tile of scores and of exp(scores), plus m, l and acc of one query tile."""
    b = min(block, n)
    return (2 * n_heads * b * b + n_heads * b * (d_head + 2)) * element


def _timed(run: Callable[[], object], device: torch.device, repeats: int) -> tuple[float, int]:
    """(fastest wall time of `repeats` runs, peak bytes the CUDA allocator saw above the start; 0 on CPU)."""
    best, peak = math.inf, 0
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)
            base = torch.cuda.memory_allocated(device)
        started = time.perf_counter()
        run()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            peak = max(peak, torch.cuda.max_memory_allocated(device) - base)
        best = min(best, time.perf_counter() - started)
    return best, peak


def measure_complexity(
    lengths: Sequence[int],
    *,
    d_head: int = 64,
    n_heads: int = 1,
    block: int = 128,
    causal: bool = True,
    repeats: int = 2,
    budget_seconds: float = 10.0,
    device: torch.device | str = "cpu",
    seed: int = 0,
) -> ComplexityReport:
    """Time and peak memory of naive and tiled attention at each length, and the fits.

    Lengths run in increasing order; once the next one's predicted cost (the last measured
    time scaled by (n'/n)²) would leave the budget, it and the longer ones are skipped.
    """
    lengths = sorted(set(lengths))
    if not lengths or len(lengths) > MAX_LENGTHS:
        raise ValueError(f"give 1 to {MAX_LENGTHS} lengths")
    if lengths[0] < 1 or lengths[-1] > MAX_LENGTH:
        raise ValueError(f"lengths must be in 1..{MAX_LENGTH}")
    if not (1 <= d_head <= 256 and 1 <= n_heads <= 16 and 1 <= block <= MAX_LENGTH and 1 <= repeats <= 5):
        raise ValueError("d_head 1..256, n_heads 1..16, block 1..4096, repeats 1..5")
    device = torch.device(device)
    report = ComplexityReport(
        device=str(device), memory_source="cuda allocator" if device.type == "cuda" else "counted",
        d_head=d_head, n_heads=n_heads, block=block,
    )
    generator = torch.Generator().manual_seed(seed)
    started, last = time.perf_counter(), None  # last: (n, seconds both methods took at n)
    for n in lengths:
        spent = time.perf_counter() - started
        predicted = 0.0 if last is None else last[1] * (n / last[0]) ** 2
        element = 4
        counted_naive, counted_tiled = naive_peak_bytes(n, n_heads, element), tiled_peak_bytes(
            n, n_heads, d_head, block, element
        )
        if last is not None and spent + predicted > budget_seconds:  # the shortest length always runs
            report.measurements.append(Measurement(n, None, None, counted_naive, counted_tiled, n * n * element))
            continue
        q, k, v = (torch.randn(n_heads, n, d_head, generator=generator).to(device) for _ in range(3))
        naive = partial(naive_attention, q, k, v, causal=causal)
        tiled = partial(flash_attention, q, k, v, block_q=block, block_k=block, causal=causal, record=False)
        t_naive, peak_naive = _timed(naive, device, repeats)
        t_tiled, peak_tiled = _timed(tiled, device, repeats)
        measured = device.type == "cuda"
        report.measurements.append(
            Measurement(
                n, t_naive, t_tiled, peak_naive if measured else counted_naive,
                peak_tiled if measured else counted_tiled, n * n * element,
            )
        )
        last = (n, (t_naive + t_tiled) * repeats)
    done = [m for m in report.measurements if m.naive_seconds is not None and m.tiled_seconds is not None]
    if len({m.n for m in done}) >= 2:
        ns = [m.n for m in done]
        report.naive_fit = fit_power_law(ns, [m.naive_seconds or 0.0 for m in done])
        report.tiled_fit = fit_power_law(ns, [m.tiled_seconds or 0.0 for m in done])
        report.naive_memory_fit = fit_power_law(ns, [max(m.naive_peak_bytes, 1) for m in done])
        report.tiled_memory_fit = fit_power_law(ns, [max(m.tiled_peak_bytes, 1) for m in done])
    return report
