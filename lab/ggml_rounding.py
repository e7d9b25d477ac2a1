"""llama.cpp's rounding, in torch, for lab/quantization.py: the 8-bit blocks it rounds activations to before a
product with quantized weights (Q8_0 / Q8_1), and re-quantizing float32 weights to a coarser type and back
(gguf.quants' Q8_0 / Q4_0 / Q4_1 arithmetic, tested bit for bit against it).

    blocks of 32 values;  d = max|x| / 127;  q = roundf(x / d) in [-127, 127];  x ≈ q · d  (d kept as float16)
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F

BLOCK = 32  # values per block of Q8_0 / Q4_0 / Q4_1 (ggml's QK8_0, QK4_0, QK4_1)
HALF_TYPES = {"F16": torch.float16, "BF16": torch.bfloat16}  # weights whose activations it rounds to their type
REQUANT_TYPES = ("Q8_0", "Q4_1", "Q4_0")  # what the weights can be re-quantized to (finer first)
Rounding = Literal["q8", "F16", "BF16"]  # 8-bit blocks of 32, or a 16-bit float type


def roundf(x: torch.Tensor) -> torch.Tensor:
    """C's roundf (halves away from zero), written as gguf.quants.np_roundf so the results are bit-equal."""
    a = x.abs()
    floored = a.floor()
    return x.sign() * (floored + (2 * (a - floored)).floor())


def _blocks(x: torch.Tensor) -> tuple[torch.Tensor, int]:
    """[..., n] -> [..., n_blocks, 32] (the last block padded with zeros, which change no block's max), n."""
    n = x.shape[-1]
    pad = -n % BLOCK
    if pad:
        x = F.pad(x, (0, pad))
    return x.reshape(*x.shape[:-1], -1, BLOCK), n


def _unblock(blocks: torch.Tensor, n: int) -> torch.Tensor:
    return blocks.reshape(*blocks.shape[:-2], -1)[..., :n]


def q8_blocks(x: torch.Tensor) -> torch.Tensor:
    """x rounded as llama.cpp rounds activations for quantized weights (Q8_0 / Q8_1): per block of 32 along the
    last dimension, d = max|x| / 127, q = roundf(x / d), x ≈ q · d with d stored as float16."""
    blocks, n = _blocks(x.float())  # [..., n_blocks, 32]
    d = blocks.abs().amax(-1, keepdim=True) / 127  # [..., n_blocks, 1]
    inverse = torch.where(d == 0, torch.zeros_like(d), 1 / d)
    q = roundf(blocks * inverse)
    return _unblock(q * d.half().float(), n)


def rounded(x: torch.Tensor, kind: Rounding) -> torch.Tensor:
    """The activations a linear layer multiplies, as llama.cpp rounds them for weights of that kind."""
    if kind == "q8":
        return q8_blocks(x)
    return x.to(HALF_TYPES[kind]).float()


def requantized(weight: torch.Tensor, kind: str) -> torch.Tensor:
    """weight [out, in] quantized to `kind` along `in` (ggml's blocks run along the fastest dimension) and
    dequantized again: gguf.quants' Q8_0 / Q4_0 / Q4_1 arithmetic, in torch (tests check it bit for bit)."""
    blocks, n = _blocks(weight.float())  # [out, n_blocks, 32]
    if kind == "Q8_0":
        return q8_blocks(weight.float())
    if kind == "Q4_0":  # d = (the value of largest magnitude) / −8, q = trunc(x / d + 8.5) in [0, 15], x ≈ (q − 8) d
        largest = blocks.gather(-1, blocks.abs().argmax(-1, keepdim=True))
        d = largest / -8
        inverse = torch.where(d == 0, torch.zeros_like(d), 1 / d)
        q = (blocks * inverse + 8.5).trunc().clamp(0, 15)
        return _unblock((q - 8) * d.half().float(), n)
    if kind == "Q4_1":  # d = (max − min) / 15, q = trunc((x − min) / d + 0.5) in [0, 15], x ≈ q d + min
        low, high = blocks.amin(-1, keepdim=True), blocks.amax(-1, keepdim=True)
        d = (high - low) / 15
        inverse = torch.where(d == 0, torch.zeros_like(d), 1 / d)
        q = ((blocks - low) * inverse + 0.5).trunc().clamp(0, 15)
        return _unblock(q * d.half().float() + low.half().float(), n)
    raise ValueError(f"cannot re-quantize to {kind!r}; choose one of {', '.join(REQUANT_TYPES)}")
