"""A GGUF file's metadata as a family record reads it (checkpoints/families/): the keys under `<arch>.`, the head
size, the config fields every decoder shares, and the RoPE factor tensors read before the config."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from checkpoints.base import CheckpointError

# RoPE tables are built for at most this many positions: a file that says more is read at this length, and
# model_meta says so (context_length, context_cap); 8192 keeps SmolLM2's own context (its file says 8192)
LONGEST_CONTEXT = 8192
Factors = tuple[float, ...]


class GgufRead:
    """The metadata of one file of architecture `arch`; `factors`: the RoPE factor tensors its family reads
    (rope_freqs, longrope's sets), None for each the file lacks; `context_cap`: the longest context built, or None
    (learned positions: the file's own)."""

    def __init__(self, metadata: Mapping[str, Any], arch: str, tied: bool, factors: Mapping[str, Factors | None],
                 context_cap: int | None, tensor_names: frozenset[str] = frozenset()) -> None:
        self.metadata, self.arch, self.prefix, self.tied = metadata, arch, arch + ".", tied
        self.factors, self.context_cap = factors, context_cap
        self.tensor_names = tensor_names  # which tensors the file has (Gemma 4: K = V where a layer has no attn_v)

    def get(self, name: str, default: Any = None) -> Any:
        """The value of `<arch>.<name>`; `default` when the file lacks it (CheckpointError when there is none)."""
        key = self.prefix + name
        if key in self.metadata:
            return self.metadata[key]
        if default is None:
            raise CheckpointError(f"the metadata has no {key}")
        return default

    def number(self, name: str, default: float | None = None) -> float:
        """`<arch>.<name>` as a finite number >= 0."""
        value = self.metadata.get(self.prefix + name, default)
        if value is None:
            raise CheckpointError(f"the metadata has no {self.prefix}{name}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise CheckpointError(f"{self.prefix}{name} = {shown(value)} must be a number >= 0")
        return float(value)

    @property
    def head_size(self) -> int:
        return head_size(self.metadata, self.arch)

    def common(self) -> dict[str, Any]:
        """The TransformerConfig fields every decoder file sets the same way: sizes, context (capped), pre-norm."""
        d_model, n_heads = int(self.get("embedding_length")), int(self.get("attention.head_count"))
        tokens = self.metadata.get("tokenizer.ggml.tokens") or []
        fields: dict[str, Any] = {
            "architecture": "decoder",
            "vocab_size": int(self.get("vocab_size", len(tokens) or None)),
            "d_model": d_model,
            "n_layers": int(self.get("block_count")),
            "n_heads": n_heads,
            "n_kv_heads": int(self.get("attention.head_count_kv", n_heads)),
            "n_ctx": int(self.get("context_length")),
            "norm_placement": "pre",
            "tied_embeddings": self.tied,
        }
        if self.context_cap is not None:
            fields["n_ctx"] = min(fields["n_ctx"], self.context_cap)
            if self.head_size * n_heads != d_model:
                fields["head_dim"] = self.head_size
        return fields

    def rope_factors(self, d_head: int, tensor: str) -> Factors | None:
        """One RoPE frequency divisor per pair, as llama.cpp computes it: the factor tensor (Llama 3.1+'s
        rope_freqs), times the linear factor (rope.scaling.factor, 0 meaning 1); None when neither scales."""
        factors = self.factors.get(tensor)
        if factors is not None and len(factors) != d_head // 2:
            raise CheckpointError(f"tensor {tensor} has {len(factors)} factors, but a head of {d_head} "
                                  f"dimensions has {d_head // 2} rotated pairs")
        linear = 1.0
        if self.metadata.get(self.prefix + "rope.scaling.type", "none") == "linear":
            linear = float(self.metadata.get(self.prefix + "rope.scaling.factor", 0.0)) or 1.0
        if factors is None and linear == 1.0:
            return None
        return tuple(linear * factor for factor in (factors or (1.0,) * (d_head // 2)))


def head_size(metadata: Mapping[str, Any], arch: str) -> int:
    """attention.key_length when the file has it (heads of their own width: Qwen3-0.6B, Gemma), else
    embedding_length / head_count."""
    if f"{arch}.attention.key_length" in metadata:
        value = metadata[f"{arch}.attention.key_length"]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 1 << 16:
            raise CheckpointError(f"{arch}.attention.key_length = {shown(value)} is not a usable head size")
        return value
    try:
        return int(metadata[f"{arch}.embedding_length"]) // int(metadata[f"{arch}.attention.head_count"])
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as error:
        raise CheckpointError(f"the metadata lacks a usable {arch}.embedding_length / head_count: {error}") from error


def shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
