"""The KV cache: what incremental decoding keeps (its cost in bytes is lab/kv_cache.py).

Decoding one token at a time, a causal model's keys and values at earlier positions never
change, so each step only projects the new token and reads the stored K and V of the rest.
`KVCache` is that store (one entry per attention layer); `Transformer.forward(..., cache=)`
fills it. With GQA/MQA only the kv_heads are stored.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

# ---------------------------------------------------------------- the cache a model fills


@dataclass
class LayerKV:
    """One attention layer's keys and values so far: [batch, pos, kv_head, d_head] each (after RoPE).

    A gated DeltaNet layer (model/deltanet.py) keeps a fixed size instead: its state [batch, head, d_value, d_key]
    and the convolution's last kernel − 1 inputs [batch, kernel - 1, conv_width], after `seen` tokens."""

    k: torch.Tensor | None = None
    v: torch.Tensor | None = None
    state: torch.Tensor | None = None
    conv: torch.Tensor | None = None
    seen: int = 0

    def extend(self, k_new: torch.Tensor, v_new: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append the new positions' K and V; return every position's."""
        self.k = k_new if self.k is None else torch.cat([self.k, k_new], dim=1)
        self.v = v_new if self.v is None else torch.cat([self.v, v_new], dim=1)
        return self.k, self.v

    @property
    def length(self) -> int:
        return self.seen if self.k is None else self.k.shape[1]

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (self.k, self.v, self.state, self.conv) if t is not None)


@dataclass
class KVCache:
    """Everything a decoding step reuses from the steps before it.

    self_attn[i]:  block i's self-attention K and V, one position more per step.
    cross_attn[i]: block i's cross-attention K and V (encoder-decoder), computed once from the source.
    memory:        the encoder output [batch, pos, d_model] (encoder-decoder), computed once.
    score_cells:   attention scores (query × key × head, summed over layers) computed so far:
                   the work the cache leaves, against `recomputed_score_cells` without it.
    """

    self_attn: list[LayerKV] = field(default_factory=list)
    cross_attn: list[LayerKV] = field(default_factory=list)
    memory: torch.Tensor | None = None
    memory_padding_mask: torch.Tensor | None = None
    score_cells: int = 0

    @property
    def length(self) -> int:
        """Positions already processed: the position index of the next token."""
        return self.self_attn[0].length if self.self_attn else 0

    def layer(self, index: int) -> tuple[LayerKV, LayerKV]:
        while len(self.self_attn) <= index:
            self.self_attn.append(LayerKV())
            self.cross_attn.append(LayerKV())
        return self.self_attn[index], self.cross_attn[index]

    def nbytes(self) -> int:
        """Bytes of the stored self-attention K and V (what grows with the context)."""
        return sum(entry.nbytes() for entry in self.self_attn)

    def cross_nbytes(self) -> int:
        return sum(entry.nbytes() for entry in self.cross_attn)
