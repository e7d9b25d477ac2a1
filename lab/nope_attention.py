"""A NoPE layer's attention beside a RoPE layer's, on one traced run of the text (SmolLM3 drops RoPE in every
fourth layer).

A RoPE layer turns q_i and k_j by their positions before the dot product, so its score depends on where the two
tokens stand; a NoPE layer scores the vectors as they are:

    RoPE layer:  score[i, j] = R(i) q_i · R(j) k_j / √d_head      (depends on i − j)
    NoPE layer:  score[i, j] = q_i · k_j / √d_head                (the same at any distance)

For each of the two layers, one head: its attention pattern and mean weight by query–key distance (read off the
trace), how far its traced scores are from the unturned q·kᵀ (0 in a NoPE layer, up to float32 rounding), and the
probe this view rests on: the last query's q and one key's k (the layer's own vectors, from the trace) with the key
moved to every position before the query, scored with the layer's own positional treatment. In a NoPE layer the
score is the same at every distance; in a RoPE layer it changes. At the key's real place the probe's score is the
traced one (checked: `real_diff`), so the probe is the model's own arithmetic, not a toy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch

from model.hooks import AttentionLayer, stage_name
from model.layers import Attention
from model.transformer import Transformer


@dataclass(frozen=True)
class LayerView:
    """One layer's head, as the view draws it."""

    layer: int
    positions: bool  # True: RoPE turns q and k here; False: a NoPE layer
    kv_head: int  # the K/V head the query head reads (GQA)
    pattern: torch.Tensor  # [q_pos, k_pos] the traced attention weights
    readable: torch.Tensor  # bool [q_pos, k_pos] the keys each query may read (the mask's complement)
    by_distance: list[float]  # [distance] mean weight on the key `distance` tokens back, over the rows that have one
    unturned_diff: float  # max |traced score − q·kᵀ/scale| over the cells the query may read
    score_scale: float  # max |traced score| over the same cells, for scale
    moved: list[float]  # [distance] the last query's score on the probe key moved `distance` tokens back
    moved_spread: float  # max − min of `moved`: 0 in a NoPE layer
    real_distance: int  # where the probe key really stands: query − key
    real_diff: float  # |moved[real_distance] − the traced score there|


@dataclass(frozen=True)
class NopeAttention:
    query: int  # the probe's query position (the last token)
    key: int  # the probe's key position
    layers: tuple[LayerView, LayerView]  # the NoPE layer, then the RoPE layer


def unturned(trace: Mapping[str, torch.Tensor], name: str, layer: int, normed: bool) -> torch.Tensor:
    """The layer's q or k as it enters the rotation (after Qwen3's per-head norm when the model has it), or as a
    NoPE layer scores it.  [pos, head, d_head]"""
    return trace[stage_name(f"norm_{name}" if normed else name, layer)][0]


def turned(attn: Attention, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """x [n, d_head] as the layer scores it at `positions` [n]: turned by RoPE's angles there, or (NoPE) as is."""
    if attn.rotary is None:
        return x
    table = attn.angles_for(int(positions.max()) + 1)  # [pos, pairs]
    rows = attn.rotary.rotate(x[None, :, None, :], table[positions], attn.cfg.rope_attention_factor)
    return rows[0, :, 0]  # [n, d_head]


def layer_view(model: Transformer, trace: Mapping[str, torch.Tensor], layer: int, head: int, key: int | None
               ) -> tuple[LayerView, int]:
    """`layer`'s view of head `head`; the probe key `key` (None: the key the last query weights most here)."""
    attn = model.attention(AttentionLayer(None, layer, False))
    cfg = model.cfg
    kv_head = head // (cfg.n_heads // attn.kv_heads)
    pattern = trace[stage_name("pattern", layer)][0, head].float()  # [q_pos, k_pos]
    scores = trace[stage_name("scores_scaled", layer)][0, head].double()  # [q_pos, k_pos], before the mask
    n = pattern.shape[0]
    q = unturned(trace, "q", layer, attn.qk_norm)[:, head].double()  # [pos, d_head]
    k = unturned(trace, "k", layer, attn.qk_norm)[:, kv_head].double()  # [pos, d_head]
    readable = trace[stage_name("attn_scores", layer)][0, head].isfinite()  # [q_pos, k_pos] what the mask leaves
    unturned_diff = float(((scores - q @ k.T / attn.scale).abs() * readable).max())
    query = n - 1
    if key is None:
        key = int(pattern[query].argmax())
    # the probe: the last query at its place, the key's own vector moved to every position 0 .. query
    places = torch.arange(query, -1, -1)  # distance d puts the key at query − d
    q_turned = turned(attn, q[query:query + 1], torch.tensor([query]))  # [1, d_head]
    k_turned = turned(attn, k[key].expand(query + 1, -1), places)  # [distance, d_head]
    moved = (k_turned @ q_turned[0]) / attn.scale  # [distance]
    by_distance = [float(torch.diagonal(pattern, offset=-d).mean()) for d in range(n)]
    view = LayerView(
        layer=layer, positions=attn.rotary is not None, kv_head=kv_head, pattern=pattern, readable=readable,
        by_distance=by_distance,
        unturned_diff=unturned_diff, score_scale=float((scores.abs() * readable).max()),
        moved=moved.tolist(), moved_spread=float(moved.max() - moved.min()), real_distance=query - key,
        real_diff=float((moved[query - key] - scores[query, key]).abs()))
    return view, key


@torch.inference_mode()
def nope_attention(model: Transformer, trace: Mapping[str, torch.Tensor], nope_layer: int, rope_layer: int, head: int,
                   key: int | None = None) -> NopeAttention:
    """Head `head` of NoPE layer `nope_layer` beside RoPE layer `rope_layer`; the probe key is `key` (None: the key
    the NoPE layer's last query weights most), the same position in both."""
    nope, key = layer_view(model, trace, nope_layer, head, key)
    rope, _ = layer_view(model, trace, rope_layer, head, key)
    return NopeAttention(query=nope.pattern.shape[0] - 1, key=key, layers=(nope, rope))
