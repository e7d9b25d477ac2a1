"""Attention weights are not what flows (misconceptions 1 and 6): one head's weights beside what it moves.

A head's output at query i is Σ_j a_ij · v_j W_O^h: the weight a_ij scales the projected value
v_j W_O^h of key j (W_O^h: the head's d_head rows of the output projection). What key j adds to
position i is the vector a_ij · v_j W_O^h, whose length ‖a_ij · v_j W_O^h‖ = a_ij · ‖v_j W_O^h‖
(Kobayashi et al. 2020, "Attention is Not Only a Weight: Analyzing Transformers with Vector
Norms"). A high weight on a key whose projected value is short moves little.

Summed over the heads (plus the output bias) the vectors give the layer's attention output
exactly; `identity_error` measures that against the traced output at every position.

A model with a norm after the sub-layer (Gemma's post_norms, an RMSNorm) writes ln(Σ ...) instead:
x ⊙ w / σ_i, with σ_i the RMS of position i's whole output. Read from the trace, σ_i is one number per
query row, so the norm is linear there: key j moves a_ij · (v_j W_O^h ⊙ w) / σ_i. The value norms are
then ‖v_j W_O^h ⊙ w‖ (the gain w is part of what a key moves), and 1/σ_i, the same for a whole row, is
left out of the flows: it changes no row's shares, top key or ranks. The identity includes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

import torch

from model.hooks import attention_layer, stage_name
from model.layers import Attention, Block, Norm
from model.transformer import Transformer


@dataclass(frozen=True)
class AttentionFlow:
    weights: torch.Tensor  # [q_pos, k_pos] the head's softmax output a_ij (0 where the mask hides the key)
    visible: torch.Tensor  # bool [q_pos, k_pos] the keys the mask lets each query read
    value_norms: torch.Tensor  # [k_pos] ‖v_j W_O^h‖
    flow_norms: torch.Tensor  # [q_pos, k_pos] ‖a_ij · v_j W_O^h‖ = a_ij · ‖v_j W_O^h‖
    flow_shares: torch.Tensor  # [q_pos, k_pos] flow_norms / their row's sum (each row sums to 1)
    key_mean_weight: torch.Tensor  # [k_pos] mean weight each key gets, over the queries that may read it
    key_mean_share: torch.Tensor  # [k_pos] mean share of what moves each key gets, over the same queries
    top_weight: list[int]  # per query: the key with the largest weight
    top_flow: list[int]  # per query: the key with the largest contribution
    rank_correlations: list[float | None]  # per query: Spearman's ρ of weights and contributions (None: < 2 keys)
    kv_head: int  # the K/V head that supplies v (GQA: shared by a group of query heads)
    identity_error: float  # max |Σ_h Σ_j a_ij v_j W_O^h + b_O − traced attention output| over positions
    output_scale: float  # max |traced attention output|, to read identity_error against
    has_out_bias: bool

    @property
    def rows_differ(self) -> int:
        return sum(w != f for w, f in zip(self.top_weight, self.top_flow, strict=True))

    @property
    def mean_rank_correlation(self) -> float | None:
        found = [r for r in self.rank_correlations if r is not None]
        return sum(found) / len(found) if found else None


def projected_values(attn: Attention, v: torch.Tensor) -> torch.Tensor:
    """v [k_pos, kv_head, d_head] -> v_j W_O^h [head, k_pos, d_model] for every query head h (GQA: its group's v)."""
    cfg = attn.cfg
    group = cfg.n_heads // cfg.kv_heads
    v = v.repeat_interleave(group, dim=1)  # [k_pos, head, d_head]
    # nn.Linear keeps W_O as [d_model, head · d_head]: head h's W_O^h is columns h·d_head .. (h+1)·d_head, transposed
    w_o = attn.W_O.weight.double().view(cfg.d_model, cfg.n_heads, cfg.d_head)  # [d_model, head, d_head]
    return torch.einsum("khd,mhd->hkm", v.double(), w_o)  # [head, k_pos, d_model]


def ranks(values: torch.Tensor) -> torch.Tensor:
    """Ranks 1..n of a 1-d tensor, ties sharing their mean rank (as scipy.stats.rankdata does)."""
    order = torch.argsort(values, stable=True)
    sorted_values = values[order]
    out = torch.empty_like(values, dtype=torch.float64)
    start = 0
    n = len(values)
    while start < n:
        end = start
        while end + 1 < n and sorted_values[end + 1] == sorted_values[start]:
            end += 1
        out[order[start : end + 1]] = (start + end) / 2 + 1
        start = end + 1
    return out


def spearman(a: torch.Tensor, b: torch.Tensor) -> float | None:
    """Spearman's rank correlation of two 1-d tensors (None: fewer than 2 values, or one side constant)."""
    if len(a) < 2:
        return None
    ra, rb = ranks(a) - (len(a) + 1) / 2, ranks(b) - (len(b) + 1) / 2
    denom = float((ra.square().sum() * rb.square().sum()).sqrt())
    return float((ra * rb).sum()) / denom if denom > 0 else None


@torch.inference_mode()
def attention_flow(model: Transformer, trace: Mapping[str, torch.Tensor], *, layer: int, head: int,
                   stack: str | None = None) -> AttentionFlow:
    """Head `head` of the self-attention in block `layer` of `stack` (model.hooks: None for a model's one
    stack, "encoder" or "decoder"), in a traced run (batch row 0)."""
    where = attention_layer(model.cfg, layer, stack)
    attn = model.attention(where)
    cfg = attn.cfg
    if not 0 <= head < cfg.n_heads:
        raise ValueError(f"head must be in 0..{cfg.n_heads - 1}, got {head}")
    patterns = trace[where.stage("pattern")][0].double()  # [head, q_pos, k_pos]
    visible = torch.isfinite(trace[where.stage("attn_scores")][0, head])  # [q_pos, k_pos]
    moved = projected_values(attn, trace[where.stage("v")][0])  # [head, k_pos, d_model]
    # the identity: every head's weighted, projected values, summed, plus the bias, are the layer's output
    rebuilt = torch.einsum("hqk,hkm->qm", patterns, moved)  # [q_pos, d_model]
    bias = attn.W_O.bias
    if bias is not None:
        rebuilt = rebuilt + bias.double()
    block = cast(Block, model.stack_named(where.stack).blocks[layer])
    if block.post_norms:  # Gemma: ln1_post(attention output) joins the stream
        post = cast(Norm, block.ln1_post)
        if post.kind != "rmsnorm":
            raise ValueError("a LayerNorm after the attention subtracts each position's mean over all heads: the "
                             "keys' vectors no longer add up to what the layer writes")
        sigma = trace[stage_name("ln1_post.scale", layer, stack=where.stack)][0].double()  # [q_pos]
        gain = cast(torch.Tensor, post.w).double()  # [d_model]
        moved = moved * gain  # [head, k_pos, d_model]: what each key's value becomes, before ÷ σ_i
        rebuilt = rebuilt * gain / sigma[:, None]
    traced = trace[stage_name("attn_out", layer, stack=where.stack)][0].double()  # [q_pos, d_model]
    weights = patterns[head]  # [q_pos, k_pos]
    value_norms = moved[head].norm(dim=-1)  # [k_pos]
    flow = weights * value_norms  # [q_pos, k_pos]: ‖a_ij v_j W_O^h‖, a_ij ≥ 0
    totals = flow.sum(-1, keepdim=True)
    shares = torch.where(totals > 0, flow / totals.clamp_min(1e-300), torch.zeros_like(flow))
    readers = visible.sum(0).clamp_min(1)  # [k_pos] queries that may read each key
    top_weight: list[int] = []
    top_flow: list[int] = []
    correlations: list[float | None] = []
    for i in range(weights.shape[0]):
        seen = visible[i].nonzero()[:, 0]  # [keys]
        if len(seen) == 0:  # a padded row reads nothing
            top_weight.append(-1)
            top_flow.append(-1)
            correlations.append(None)
            continue
        top_weight.append(int(seen[weights[i, seen].argmax()]))
        top_flow.append(int(seen[flow[i, seen].argmax()]))
        correlations.append(spearman(weights[i, seen], flow[i, seen]))
    return AttentionFlow(
        weights=weights.float(), visible=visible, value_norms=value_norms.float(), flow_norms=flow.float(),
        flow_shares=shares.float(), key_mean_weight=(weights.sum(0) / readers).float(),
        key_mean_share=(shares.sum(0) / readers).float(), top_weight=top_weight, top_flow=top_flow,
        rank_correlations=correlations,
        kv_head=head // (cfg.n_heads // cfg.kv_heads), identity_error=float((rebuilt - traced).abs().max()),
        output_scale=float(traced.abs().max()), has_out_bias=bias is not None,
    )
