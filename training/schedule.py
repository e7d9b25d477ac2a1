"""The one learning-rate schedule: linear warmup, then cosine decay to a floor."""

from __future__ import annotations

import math


def learning_rate(step: int, *, peak: float, warmup: int, total: int, floor: float, decay_delay: int = 0) -> float:
    """The learning rate for optimizer step `step` (1 = the first step).

    Warmup: peak * step / warmup for the first `warmup` steps. Then a cosine from peak down to
    floor * peak, reached at step `total + decay_delay`; `decay_delay` shifts the start of the
    cosine that many steps later (the language model uses 1, the translator 0).
    """
    warm = 1.0 if warmup <= 0 else min(1.0, step / warmup)
    progress = min(1.0, max(0.0, (step - decay_delay - warmup) / max(1, total - warmup)))
    return peak * warm * (floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * progress)))
