"""Positional information: the one registry of kinds, each kind a class that carries what it does.

Three families, one base class each: an embedding kind adds a table to the token vectors
(`EmbeddingKind.table`), a rotary kind rotates q and k (`RotaryKind.angles`, `.rotate`), a bias kind
adds a bias to the attention scores (`BiasKind.bias`). Every kind also checks the sizes it needs
(`check`) and says what the explorer shows of it (`show`: GET /api/positional-encoding). The layers,
the config, the API and the page ask the kind; none of them compares its name.

KINDS is the only list of kinds. Adding one is one class here, decorated with `@register`, plus its
texts (docs/ARCHITECTURE.md, "Add a positional encoding").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Literal, TypeVar

import torch

Where = Literal["embedding", "q_k", "scores", "nowhere"]
Dims = tuple[str, ...]
Shown = dict[str, tuple[torch.Tensor, Dims]]  # what the explorer shows: name -> (tensor, its dims)


class UnknownKind(ValueError):
    """A positional-encoding name that is not in KINDS."""


class NeedsModel(ValueError):
    """A kind whose numbers exist only in a trained model (a learned table) was asked for without one."""


@dataclass(frozen=True)
class Sizes:
    """The sizes a kind's numbers are shown at."""

    length: int  # positions
    d_model: int
    n_heads: int
    base: float = 10000.0  # rotary kinds' base (theta)
    causal: bool = True  # bias kinds: distances q - k (causal) or |q - k|
    freq_factors: tuple[float, ...] | None = None  # rotary kinds: pair i turns freq_factors[i] times slower
    rotary_dims: int | None = None  # rotary kinds: only the first rotary_dims of each head turn; None -> d_head
    attention_factor: float = 1.0  # rotary kinds: the turned dimensions are also multiplied by this (longrope)
    long_freq_factors: tuple[float, ...] | None = None  # longrope: the factors past original_context positions
    original_context: int | None = None
    head_dim: int | None = None  # a model's own head width (Gemma, Qwen3); None -> d_model / n_heads

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads if self.head_dim is None else self.head_dim

    @property
    def turned(self) -> int:
        """How many dimensions of each head a rotary kind turns."""
        return self.d_head if self.rotary_dims is None else self.rotary_dims


class PositionalKind:
    """One way of telling a Transformer where each token is: what it is, and what it does."""

    name: ClassVar[str]
    where: ClassVar[Where]  # what it changes: the token vectors, q and k, the attention scores, or nothing
    learned: ClassVar[bool] = False  # a table trained with the model (it has no row past the trained context)
    extrapolates: ClassVar[bool] = True  # defined at positions past the longest training sequence
    paper: ClassVar[str]  # where it comes from

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "where": self.where, "learned": self.learned,
                "extrapolates": self.extrapolates, "paper": self.paper}

    def check(self, d_model: int, n_heads: int) -> None:
        """Raise ValueError, naming this kind and the field, for sizes it cannot work with."""

    def show(self, sizes: Sizes, model_table: torch.Tensor | None = None) -> Shown:
        """What GET /api/positional-encoding answers for this kind at these sizes.

        model_table: the position table of a model that uses this kind (embedding kinds), if any.
        """
        raise NotImplementedError(f"the positional encoding '{self.name}' has no numbers to show")

    def _need_heads(self, d_model: int, n_heads: int) -> None:
        if d_model % n_heads:
            raise ValueError(f"positional encoding '{self.name}' works per head: d_model ({d_model}) must be "
                             f"divisible by n_heads ({n_heads})")

    def __repr__(self) -> str:
        return f"<positional encoding {self.name!r}>"


KINDS: dict[str, PositionalKind] = {}
K = TypeVar("K", bound=type[PositionalKind])


def register(cls: K) -> K:
    """Add a kind to the registry (in the order kinds are defined: the API lists them so)."""
    KINDS[cls.name] = cls()
    return cls


def kind_of(name: str) -> PositionalKind:
    """The registered kind of this name; UnknownKind names it and the known ones."""
    kind = KINDS.get(name)
    if kind is None:
        raise UnknownKind(f"unknown positional encoding {name!r}; choose one of {', '.join(KINDS)}")
    return kind


# ---------------------------------------------------------------- the families


class EmbeddingKind(PositionalKind):
    """Adds one vector per position to the token vectors:  x_i <- x_i + table[i]."""

    where: ClassVar[Where] = "embedding"

    def table(self, n_pos: int, d_model: int) -> torch.Tensor:
        """The fixed table.  [pos, d_model]  (a learned kind has none: its table is a parameter)"""
        raise NotImplementedError(f"'{self.name}' is learned: its table is the model's W_pos")

    def show(self, sizes: Sizes, model_table: torch.Tensor | None = None) -> Shown:
        return {"table": (self.table(sizes.length, sizes.d_model), ("pos", "d_model"))}


class RotaryKind(PositionalKind):
    """Rotates each pair of dimensions of q and k by an angle that grows with the position."""

    where: ClassVar[Where] = "q_k"

    def check(self, d_model: int, n_heads: int) -> None:
        self._need_heads(d_model, n_heads)
        if (d_model // n_heads) % 2:
            raise ValueError(f"positional encoding '{self.name}' rotates pairs of dimensions: it needs an even d_head, "
                             f"got d_model / n_heads = {d_model} / {n_heads} = {d_model // n_heads}")

    def angles(self, n_pos: int, d_head: int, base: float, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """theta[pos, i]: the angle pair i turns by at position pos.  [pos, d_head/2]"""
        raise NotImplementedError

    def scaled_angles(self, n_pos: int, d_head: int, base: float, factors: tuple[float, ...] | None,
                      dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """theta[pos, i] / factors[i]: RoPE scaling turns pair i that many times slower.  [pos, d_head/2]

        Llama 3.1's "llama3" scaling slows only the slow pairs (long wavelengths), "linear" every pair alike;
        both are stored as one factor per pair (llama.cpp's rope_freqs). None: the kind's own angles.
        """
        angles = self.angles(n_pos, d_head, base, dtype)
        return angles if factors is None else angles / torch.tensor(factors, dtype=dtype)

    def rotate(self, x: torch.Tensor, angles: torch.Tensor, scale: float = 1.0,
               waves: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
        """Each pair of x turned by its angle.  x: [batch, pos, head, d_head]; angles: [pos, rotary_dims/2]

        Partial rotary (Phi-3, Phi-4-mini): angles for fewer pairs than d_head/2 turn only the first
        rotary_dims = 2 · angles.shape[-1] dimensions of each head, paired by rotate-half within them (i with
        i + rotary_dims/2); the other dimensions pass through unchanged. `scale` multiplies the turned
        dimensions (longrope's attention factor, which transformers applies to cos and sin).
        """
        turned = 2 * angles.shape[-1]
        if turned == x.shape[-1] and scale == 1.0:
            return apply_rope(x, angles, waves)
        rotated = apply_rope(x[..., :turned], angles, waves) * scale
        return torch.cat((rotated, x[..., turned:]), dim=-1)

    def show(self, sizes: Sizes, model_table: torch.Tensor | None = None) -> Shown:
        """The angles per (pos, pair), and what the rotation does to a vector of ones.

        `rotated[pos]` is the rotation of [1, 1, ..., 1] at pos: each pair traces a circle at its own speed.
        With RoPE scaling (sizes.freq_factors) the angles are the scaled ones, and `factors` and `frequencies`
        (each pair's angle per position, scaled, [pair]) say by how much each pair was slowed.
        With partial rotary (sizes.rotary_dims) there is one pair per two turned dimensions, and `rotated` shows
        the dimensions past them passing through unchanged.
        Longrope (sizes.long_freq_factors): `angles` use the set a sequence of sizes.length tokens uses (the long
        one past sizes.original_context); `factors` / `frequencies` are the short set, `long_factors` /
        `long_frequencies` the long one.
        """
        in_use = sizes.freq_factors
        if sizes.long_freq_factors is not None and sizes.length > (sizes.original_context or 0):
            in_use = sizes.long_freq_factors
        angles = self.scaled_angles(sizes.length, sizes.turned, sizes.base, in_use)  # [pos, pair]
        ones = torch.ones(1, sizes.length, 1, sizes.d_head)  # [batch, pos, head, d_head]
        rotated = self.rotate(ones, angles, sizes.attention_factor)[0, :, 0, :]  # [pos, d_head]
        pairs = ("pos", "pair")
        shown: Shown = {"angles": (angles, pairs), "cos": (angles.cos(), pairs), "sin": (angles.sin(), pairs),
                        "rotated": (rotated, ("pos", "d_head"))}
        if sizes.freq_factors is not None:
            frequencies = self.scaled_angles(2, sizes.turned, sizes.base, sizes.freq_factors)[1]  # [pair]
            shown["factors"] = (torch.tensor(sizes.freq_factors, dtype=torch.float32), ("pair",))
            shown["frequencies"] = (frequencies, ("pair",))
        if sizes.long_freq_factors is not None:
            long = self.scaled_angles(2, sizes.turned, sizes.base, sizes.long_freq_factors)[1]  # [pair]
            shown["long_factors"] = (torch.tensor(sizes.long_freq_factors, dtype=torch.float32), ("pair",))
            shown["long_frequencies"] = (long, ("pair",))
        return shown


class BiasKind(PositionalKind):
    """Adds a bias to every attention score that depends on the two positions:  S'(h, i, j) += bias[h, i, j]."""

    where: ClassVar[Where] = "scores"

    def check(self, d_model: int, n_heads: int) -> None:
        self._need_heads(d_model, n_heads)

    def slopes(self, n_heads: int) -> torch.Tensor:
        """How steeply each head's bias falls with distance.  [head]"""
        raise NotImplementedError

    def bias(self, n_heads: int, q_len: int, k_len: int, causal: bool) -> torch.Tensor:
        """bias[h, q, k] = -slope_h * distance(q, k) for queries 0..q_len-1, keys 0..k_len-1.  [head, q_pos, k_pos]

        The family's form (ALiBi's); a kind picks its slopes. The flash and linear-attention labs tile this form.
        """
        return -self.slopes(n_heads)[:, None, None] * score_distance(q_len, k_len, causal)

    def show(self, sizes: Sizes, model_table: torch.Tensor | None = None) -> Shown:
        return {"slopes": (self.slopes(sizes.n_heads), ("head",)),
                "bias": (self.bias(sizes.n_heads, sizes.length, sizes.length, sizes.causal),
                         ("head", "q_pos", "k_pos"))}


# ---------------------------------------------------------------- the kinds (registered in this order)


@register
class Sinusoidal(EmbeddingKind):
    name = "sinusoidal"
    paper = "Vaswani et al. 2017"

    def check(self, d_model: int, n_heads: int) -> None:
        if d_model % 2:
            raise ValueError(f"positional encoding '{self.name}' fills each pair of dimensions with a sin and a cos: "
                             f"it needs an even d_model, got {d_model}")

    def table(self, n_pos: int, d_model: int) -> torch.Tensor:
        return sinusoidal_table(n_pos, d_model)


@register
class Learned(EmbeddingKind):
    name = "learned"
    learned = True
    extrapolates = False
    paper = "GPT-2, BERT"

    def show(self, sizes: Sizes, model_table: torch.Tensor | None = None) -> Shown:
        if model_table is None:
            raise NeedsModel("A learned table belongs to a trained model: pass `model` naming one with learned "
                             "positions.")
        return {"table": (model_table[: min(sizes.length, model_table.shape[0])], ("pos", "d_model"))}


@register
class Rope(RotaryKind):
    name = "rope"
    paper = "Su et al. 2021 (RoFormer)"

    def angles(self, n_pos: int, d_head: int, base: float, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return rope_angles(n_pos, d_head, base, dtype)


@register
class Alibi(BiasKind):
    name = "alibi"
    paper = "Press et al. 2022"

    def slopes(self, n_heads: int) -> torch.Tensor:
        return alibi_slopes(n_heads)


@register
class NoPositions(PositionalKind):
    name = "none"
    where: ClassVar[Where] = "nowhere"
    paper = "NoPE: causal masks alone"


# ---------------------------------------------------------------- the formulas


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


def llama3_freq_factors(d_head: int, base: float, factor: float, low_freq_factor: float, high_freq_factor: float,
                        original_context: int) -> tuple[float, ...]:
    """Llama 3.1's RoPE scaling as one factor per pair (what llama.cpp's converter stores as rope_freqs).

    A pair whose wavelength 2π/ω_i is shorter than original_context / high_freq_factor is kept (factor 1); one
    longer than original_context / low_freq_factor turns `factor` times slower; in between, the rate is
    blended: ω_i' = ((1 - s) / factor + s) · ω_i with s = (original_context / wavelength - low) / (high - low).
    """
    if not high_freq_factor > low_freq_factor > 0 or not factor > 0 or original_context < 1:
        raise ValueError(f"llama3 RoPE scaling needs high_freq_factor > low_freq_factor > 0, factor > 0 and "
                         f"original_max_position_embeddings >= 1; got high_freq_factor {high_freq_factor}, "
                         f"low_freq_factor {low_freq_factor}, factor {factor}, original {original_context}")
    inv_freq = 1.0 / torch.pow(base, torch.arange(0, d_head, 2, dtype=torch.float32) / d_head)
    factors = []
    for frequency in inv_freq.tolist():
        wavelength = 2 * math.pi / frequency
        if wavelength < original_context / high_freq_factor:
            factors.append(1.0)
        elif wavelength > original_context / low_freq_factor:
            factors.append(float(factor))
        else:
            smooth = (original_context / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor)
            factors.append(1.0 / ((1 - smooth) / factor + smooth))
    return tuple(factors)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(x1, x2) -> (-x2, x1) where x1, x2 are the two halves of the last dimension.

    Dimension i is paired with i + d_head/2 (the Llama / Hugging Face convention).
    """
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rope_waves(angles: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of each pair's angle, repeated for both halves.  angles: [pos, pairs] -> 2 × [1, pos, 1, 2·pairs]"""
    cos, sin = angles.cos(), angles.sin()
    return torch.cat((cos, cos), dim=-1)[None, :, None, :], torch.cat((sin, sin), dim=-1)[None, :, None, :]


def apply_rope(x: torch.Tensor, angles: torch.Tensor,
               waves: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
    """Rotate each pair of x by its angle.  x: [batch, pos, head, d_head]; angles: [pos, d_head/2]
    (waves: rope_waves(angles), when the caller turns q and k at the same positions and computes them once)"""
    cos, sin = waves if waves is not None else rope_waves(angles)
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
    return -alibi_slopes(n_heads)[:, None, None] * score_distance(q_len, k_len, causal)


def score_distance(q_len: int, k_len: int, causal: bool) -> torch.Tensor:
    """distance[q, k]: q - k for causal stacks (future keys are masked anyway), else |q - k|.  [q_pos, k_pos]"""
    q = torch.arange(q_len)[:, None]
    k = torch.arange(k_len)[None, :]
    distance = (q - k) if causal else (q - k).abs()
    return distance.clamp(min=0).to(torch.float32)
