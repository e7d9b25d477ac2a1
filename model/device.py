"""Which torch device a model runs on, and token ids put there as the batch a model reads."""

from __future__ import annotations

from collections.abc import Sequence
from typing import overload

import torch


def pick_device(setting: str = "auto") -> torch.device:
    """'auto' -> CUDA when present, else CPU; otherwise the named device."""
    if setting == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(setting)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was asked for, but no CUDA GPU is available")
    return device


@overload
def one_row(ids: Sequence[int], device: torch.device | str) -> torch.Tensor: ...
@overload
def one_row(ids: None, device: torch.device | str) -> None: ...
def one_row(ids: Sequence[int] | None, device: torch.device | str) -> torch.Tensor | None:
    """One text's token ids as a batch of one row, [1, pos] (int64) on `device`; None (no target text) stays None."""
    return None if ids is None else torch.tensor([list(ids)], dtype=torch.long, device=device)
