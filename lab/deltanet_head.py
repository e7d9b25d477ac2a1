"""One real gated DeltaNet head (Qwen3.5's linear attention, model/deltanet.py) on a text: the RNN came back, with a
matrix for a state. Read off the model's own forward pass, for the linear-attention panel (beside its toy, elu + 1
on a softmax head's q, k, v) and for the lesson claim `deltanet_state` (lessons/lab_claims.py).

What one value head h of DeltaNet layer L keeps is S [d_value, d_key], written token by token by the delta rule:
its size does not depend on the text's length. The same text cut at half its tokens gives a state of the same
shape (the layer is causal: that is the state after the half's last token). The model's attention layers keep
every token's K and V instead: 2 · kv_heads · d_head numbers per token and layer, growing with the text.

Without a hybrid of its own, a caller reads the shipped one, tiny-deltanet (model/weights/tiny-deltanet: Qwen3.5's
shape, trained by `transformer-explorer train --config tiny-deltanet`, docs/MODELS.md), loaded once, as
lab/recurrence.py loads the shipped GRU.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import torch

from analysis.heads import bos_id_for
from checkpoints import LoadedModel, load_checkpoint
from model.device import one_row
from model.hooks import stage_name
from model.tokenizer import Token
from model.transformer import Transformer

SHIPPED_HYBRID = "tiny-deltanet"
WEIGHTS = Path(__file__).resolve().parents[1] / "model" / "weights"


class NotDeltaNet(ValueError):
    """A layer or head that is no gated DeltaNet head of the model, said for a student."""


@lru_cache(maxsize=1)
def shipped_hybrid() -> LoadedModel:
    """tiny-deltanet, from model/weights (loaded once, in eval mode)."""
    loaded = load_checkpoint(WEIGHTS / SHIPPED_HYBRID)
    loaded.model.eval()
    return loaded


def text_tokens(loaded: LoadedModel, text: str) -> list[Token]:
    """A text's tokens as the model was trained to read them: its start token (meta `bos_token`, an empty span),
    then the text's."""
    bos = bos_id_for(loaded.tokenizer, loaded.meta)
    start = [] if bos is None else [Token(bos, str(loaded.meta.get("bos_token", "")), 0, 0)]
    return start + list(loaded.tokenizer.encode(text))


@dataclass(frozen=True)
class DeltaNetHead:
    """One value head of one DeltaNet layer on a text; and the model's first attention layer beside it."""

    layer: int
    head: int
    key_head: int  # the key head it reads (value heads share key heads in groups)
    heads: int  # value heads in the layer
    d_key: int
    d_value: int
    n_tokens: int
    state: torch.Tensor  # [d_value, d_key] S after the text's last token
    half_tokens: int  # the text cut at half its tokens (at least one)
    half_state_shape: tuple[int, ...]  # S's shape after the half's last token, from its own forward pass
    change: torch.Tensor  # [pos] ‖S_t − S_{t−1}‖ / max(‖S_t‖, ‖S_{t−1}‖), per token (1 at the first)
    kept: torch.Tensor  # [pos] exp(g_t): the share of S kept before each token writes
    beta: torch.Tensor  # [pos] β_t: how strongly each token writes
    read: torch.Tensor  # [pos, d_value] o_t = S_t q_t, the read-out of each token
    attention_layer: int | None  # the model's first full-attention layer, None when it has none
    kv_per_token: int  # that layer's K and V numbers per token: 2 · kv_heads · d_head (0 without one)

    @property
    def state_numbers(self) -> int:
        """One head's state: d_value · d_key numbers, at any length."""
        return self.d_value * self.d_key

    @property
    def layer_state_numbers(self) -> int:
        """The whole layer's state: every value head's S."""
        return self.heads * self.state_numbers

    @property
    def kv_numbers(self) -> int:
        """The attention layer's K/V cache for this text: kv_per_token · n_tokens."""
        return self.kv_per_token * self.n_tokens

    @property
    def crossover(self) -> int | None:
        """The fewest tokens whose K/V cache in the attention layer holds more numbers than this DeltaNet layer's
        whole state (None without an attention layer)."""
        return self.layer_state_numbers // self.kv_per_token + 1 if self.kv_per_token else None

    @property
    def last_change(self) -> float:
        return float(self.change[-1])


def check_head(model: Transformer, layer: int, head: int) -> None:
    """A NotDeltaNet naming the model's DeltaNet layers, or its value heads, when (layer, head) is none of them."""
    cfg = model.cfg
    deltanet = [i for i in range(cfg.n_layers) if cfg.is_deltanet(i)]
    if not deltanet:
        raise NotDeltaNet("this model has no gated DeltaNet layer (it is no Qwen3.5-shaped hybrid)")
    if layer not in deltanet:
        raise NotDeltaNet(f"layer {layer} is not a gated DeltaNet layer of this model (those are layers "
                          f"{', '.join(map(str, deltanet))})")
    heads = cfg.deltanet_value_heads or 0
    if not 0 <= head < heads:
        raise NotDeltaNet(f"head {head} is not a DeltaNet head of layer {layer} (it has value heads 0 to {heads - 1})")


@torch.no_grad()
def deltanet_head(model: Transformer, token_ids: list[int], layer: int, head: int) -> DeltaNetHead:
    """Value head `head` of DeltaNet layer `layer` on the tokens (BOS included when the model reads one): its state
    after the last token, and after the half's last token from a pass over the half alone."""
    check_head(model, layer, head)
    if not token_ids:
        raise NotDeltaNet("the text has no tokens")
    cfg = model.cfg
    names = {stage: stage_name(stage, layer) for stage in ("state", "state_change", "decay", "beta", "read")}
    tokens = one_row(token_ids, model.device)
    _, trace = model.run_with_trace(tokens, names=list(names.values()))
    half = max(1, len(token_ids) // 2)
    _, half_trace = model.run_with_trace(tokens[:, :half], names=[names["state"]])
    attention = next((i for i in range(cfg.n_layers) if not cfg.is_deltanet(i)), None)
    per_token = 0 if attention is None else 2 * cfg.kv_heads_of(attention) * cfg.d_head_of(attention)
    heads, key_heads = cfg.deltanet_value_heads or 1, cfg.deltanet_key_heads or 1
    state = trace[names["state"]][0, head].float()  # [head, d_value, d_key] -> [d_value, d_key]
    return DeltaNetHead(
        layer=layer, head=head, key_head=head // (heads // key_heads), heads=heads,
        d_key=int(state.shape[1]), d_value=int(state.shape[0]), n_tokens=len(token_ids), state=state,
        half_tokens=half, half_state_shape=tuple(half_trace[names["state"]][0, head].shape),
        change=trace[names["state_change"]][0, :, head].float(),  # [pos, head] -> [pos]
        kept=trace[names["decay"]][0, :, head].float().exp(), beta=trace[names["beta"]][0, :, head].float(),
        read=trace[names["read"]][0, :, head].float(),  # [pos, head, d_value] -> [pos, d_value]
        attention_layer=attention, kv_per_token=per_token,
    )

