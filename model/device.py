"""Which torch device a model runs on."""

from __future__ import annotations

import torch


def pick_device(setting: str = "auto") -> torch.device:
    """'auto' -> CUDA when present, else CPU; otherwise the named device."""
    if setting == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(setting)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was asked for, but no CUDA GPU is available")
    return device
