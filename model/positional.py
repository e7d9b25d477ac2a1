"""Positional information: the one registry of kinds, and each kind's formula.

Sinusoidal and learned tables are added to the token vectors; RoPE rotates q and k; ALiBi adds a
bias to the scores. Each function reads like its formula; the explorer's positional view calls the
same code. KINDS is the only list of kinds: the config, the API's schemas and the page read it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Literal

import torch

Where = Literal["embedding", "q_k", "scores", "nowhere"]


@dataclass(frozen=True)
class PositionalKind:
    """One way of telling a Transformer where each token is."""

    name: str
    where: Where  # what it changes: the token vectors, q and k, the attention scores, or nothing
    learned: bool  # a table trained with the model (it has no row past the trained context)
    extrapolates: bool  # defined at positions past the longest training sequence
    paper: str  # where it comes from

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


KINDS: dict[str, PositionalKind] = {
    kind.name: kind
    for kind in (
        PositionalKind("sinusoidal", "embedding", learned=False, extrapolates=True, paper="Vaswani et al. 2017"),
        PositionalKind("learned", "embedding", learned=True, extrapolates=False, paper="GPT-2, BERT"),
        PositionalKind("rope", "q_k", learned=False, extrapolates=True, paper="Su et al. 2021 (RoFormer)"),
        PositionalKind("alibi", "scores", learned=False, extrapolates=True, paper="Press et al. 2022"),
        PositionalKind("none", "nowhere", learned=False, extrapolates=True, paper="NoPE: causal masks alone"),
    )
}


def sinusoidal_table(n_pos: int, d_model: int) -> torch.Tensor:
    """PE[pos, 2i] = sin(pos / 10000^(2i/d_model)), PE[pos, 2i+1] = cos(same angle).  [pos, d_model]"""
    position = torch.arange(n_pos, dtype=torch.float32)[:, None]  # [pos, 1]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)  # [d_model/2]
    angle = position / torch.pow(10000.0, two_i / d_model)  # [pos, d_model/2]
    table = torch.zeros(n_pos, d_model)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle)
    return table


def rope_angles(n_pos: int, d_head: int, base: float = 10000.0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """theta[pos, i] = pos * base^(-2i/d_head) for the d_head/2 rotated pairs.  [pos, d_head/2]

    The lab asks for float64: far positions (angles of hundreds of radians) then keep a 1e-5 equality visible.
    """
    inv_freq = 1.0 / torch.pow(base, torch.arange(0, d_head, 2, dtype=dtype) / d_head)
    position = torch.arange(n_pos, dtype=dtype)
    return torch.outer(position, inv_freq)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(x1, x2) -> (-x2, x1) where x1, x2 are the two halves of the last dimension.

    Dimension i is paired with i + d_head/2 (the Llama / Hugging Face convention).
    """
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    """Rotate each pair of x by its angle.  x: [batch, pos, head, d_head]; angles: [pos, d_head/2]"""
    cos = torch.cat((angles.cos(), angles.cos()), dim=-1)[None, :, None, :]  # [1, pos, 1, d_head]
    sin = torch.cat((angles.sin(), angles.sin()), dim=-1)[None, :, None, :]
    return x * cos + rotate_half(x) * sin


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """Head h gets slope 2^(-8h/n) for h = 1..n (Press et al. 2022).  [head]

    For a head count that is not a power of two, take the slopes of the nearest lower
    power of two, then every other slope of the doubled sequence, as the paper does.
    """

    def power_of_two_slopes(n: int) -> list[float]:
        start = 2.0 ** (-8.0 / n)
        return [start ** (h + 1) for h in range(n)]

    if math.log2(n_heads).is_integer():
        slopes = power_of_two_slopes(n_heads)
    else:
        closest = 2 ** math.floor(math.log2(n_heads))
        slopes = power_of_two_slopes(closest) + power_of_two_slopes(2 * closest)[0::2][: n_heads - closest]
    return torch.tensor(slopes, dtype=torch.float32)


def alibi_bias(n_heads: int, q_len: int, k_len: int, causal: bool) -> torch.Tensor:
    """bias[h, q, k] = -slope_h * distance(q, k).  [head, q_pos, k_pos]

    Causal stacks use q - k (future keys are masked anyway); bidirectional ones use |q - k|.
    """
    q = torch.arange(q_len)[:, None]
    k = torch.arange(k_len)[None, :]
    distance = (q - k) if causal else (q - k).abs()
    distance = distance.clamp(min=0).to(torch.float32)  # [q_pos, k_pos]
    return -alibi_slopes(n_heads)[:, None, None] * distance
