"""Direct logit attribution: one logit split into what each part of the model wrote into the residual stream.

In a Pre-LN decoder the last residual stream at position p is a sum of what every part wrote there:

    x_p = embed_p (+ pos_p) + Σ_L [ Σ_h z_{p,h} W_O^{L,h} + b_O^L ] + Σ_L [ FFN_L(p) + b_out^L ]

and the logit of token t reads it through the final norm and the unembedding row W_U[t]:

    logit_t = W_U[t] · ( (x_p − mean(x_p)) / σ_p ⊙ w + β )      (LayerNorm; RMSNorm: no mean, no β)

σ_p depends on x_p itself, so the logit is not linear in the parts; holding σ_p at its value in the real
run (as TransformerLens does) makes it linear. Mean-centering is linear, so it moves onto the direction:
(c − mean(c)) · g = c · (g − mean(g)). Each part c then adds c · u_t, with u_t = centre(W_U[t] ⊙ w) / σ_p,
and β · W_U[t] is one more bias term. The parts add up to the model's own logit, exactly up to rounding.

A head's part splits further by the key it read: z_{p,h} = Σ_j a_pj v_j, so the head adds
Σ_j a_pj (v_j W_O^h) · u_t, one term per earlier token (lab/attention_flow.py's a_ij · v_j W_O^h).

A norm after each sub-layer (Gemma's post_norms, RMSNorm) is frozen the same way: its σ at position p,
read from the trace, makes it x ⊙ w / σ, linear, so a head of that layer adds z W_O^h · (u_t ⊙ w / σ) and a bias
b · (u_t ⊙ w / σ); the FFN's traced output is already normed.

What cannot be split this way is refused by name: a soft cap on the logits (Gemma 2) bends their sum
by cap · tanh(sum / cap), so the parts add up to the logit before the cap, not the model's; a Post-LN block
normalises the sum after every block, so each earlier part is rescaled by a factor that depends on all the
others (no sum of parts); an encoder has no next token; an encoder-decoder's decoder stream also takes
cross-attention from the encoder (and the one shipped, tiny-translator, is Post-LN).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

import torch

from lab.attention_flow import projected_values
from model.hooks import stage_name
from model.layers import MLP, Block
from model.transformer import Transformer


class NotAdditive(ValueError):
    """A model whose logit is not a sum of its parts' contributions (the message says why)."""


@dataclass(frozen=True)
class SourceSplit:
    """One head's part split by the key it read: sources[j] = a_pj · (v_j W_O^h) · u."""

    layer: int
    head: int
    contribution: float  # the head's part, z_{p,h} W_O^h · u
    sources: list[float]  # [k_pos] its terms (0 for keys the mask hides)
    identity_error: float  # |Σ_j sources[j] − contribution|


@dataclass(frozen=True)
class LogitAttribution:
    position: int
    target: int
    versus: int | None
    heads: torch.Tensor  # [layer, head] z_{p,h} W_O^h · u
    ffn: torch.Tensor  # [layer] (FFN output − its output bias) · u
    attn_bias: torch.Tensor | None  # [layer] b_O · u (None: no attention output bias)
    ffn_bias: torch.Tensor | None  # [layer] b_out · u (None: no FFN bias)
    embedding: dict[str, float]  # "token", "position", "segments" (or "embeddings": after an embedding norm)
    final_norm_bias: float | None  # β · W_U[t] (LayerNorm only)
    norm: str | None  # the final norm's kind (None: the model has none)
    norm_scale: float | None  # σ_p of the final norm in the real run, held fixed
    logit: float  # the model's own logit (target − versus), from the run
    top: list[SourceSplit]  # the heads with the largest |part|, largest first

    @property
    def layers(self) -> torch.Tensor:
        """[layer] everything block L wrote: its heads, its FFN and their biases."""
        per_layer = self.heads.sum(-1) + self.ffn
        for bias in (self.attn_bias, self.ffn_bias):
            if bias is not None:
                per_layer = per_layer + bias
        return per_layer

    @property
    def running(self) -> torch.Tensor:
        """[layer + 1] the logit read so far: after the embeddings, then after each block (+ β · W_U at the end,
        so the last entry is the total)."""
        start = sum(self.embedding.values()) + (self.final_norm_bias or 0.0)
        return torch.cat([torch.tensor([start], dtype=torch.float64), start + self.layers.cumsum(0)])

    @property
    def total(self) -> float:
        return float(self.running[-1])


def check_additive(model: Transformer) -> None:
    """Refuse, saying why, a model whose logit is no sum of parts."""
    cfg = model.cfg
    if not cfg.lm_head or cfg.architecture == "encoder":
        raise NotAdditive("an encoder reads the whole text at once and predicts no next token: there is no logit "
                          "to split")
    if cfg.architecture == "encoder-decoder":
        raise NotAdditive("an encoder-decoder's decoder stream also takes cross-attention from the encoder, which "
                          "this split does not follow (and the one shipped, tiny-translator, is Post-LN)")
    if cfg.logit_softcap is not None:
        raise NotAdditive(f"this model soft-caps its logits: each becomes {cfg.logit_softcap:g} · tanh(logit / "
                          f"{cfg.logit_softcap:g}) after the parts are summed, so the parts no longer add up to the "
                          "logit it shows")
    if cfg.post_norms and cfg.norm != "rmsnorm":
        raise NotAdditive("this model has a LayerNorm after each sub-layer: it subtracts the mean of all the heads "
                          "together, so a head's part depends on the others")
    if cfg.norm_placement == "post":
        raise NotAdditive("this model is Post-LN: it normalises the stream after every block, so each earlier "
                          "part is rescaled by a factor that depends on all the others, and the parts no longer "
                          "add up to the logit")


def logit_direction(model: Transformer, trace: Mapping[str, torch.Tensor], position: int,
                    token: int) -> tuple[torch.Tensor, float, float | None]:
    """u [d_model] with logit_t = Σ_parts part · u + constant, σ_p frozen; and (constant, σ_p)."""
    w_u = model.W_U.weight[token].double()  # [d_model]
    if not model.cfg.final_norm:
        return w_u, 0.0, None
    norm = model.stack_named(None).ln_final
    sigma = float(trace[stage_name("ln_final.scale")][0, position])
    gain = w_u * norm.w.double()  # [d_model]
    constant = 0.0
    if norm.kind == "layernorm":
        gain = gain - gain.mean()  # (c − mean(c)) · g = c · (g − mean(g))
        constant = float(norm.b.double() @ w_u)
    return gain / sigma, constant, sigma


@torch.inference_mode()
def logit_attribution(model: Transformer, trace: Mapping[str, torch.Tensor], logits: torch.Tensor, *,
                      position: int, target: int, versus: int | None = None, top: int = 3) -> LogitAttribution:
    """Split logits[0, position, target] (− that of `versus`) of a traced run (batch row 0) into its parts."""
    check_additive(model)
    cfg = model.cfg
    u, constant, sigma = logit_direction(model, trace, position, target)
    logit = float(logits[0, position, target])
    if versus is not None:
        u_v, constant_v, _ = logit_direction(model, trace, position, versus)
        u, constant = u - u_v, constant - constant_v
        logit -= float(logits[0, position, versus])
    stack = model.stack_named(None)

    def read(stage: str, layer: int | None = None) -> torch.Tensor:
        return trace[stage_name(stage, layer)][0].double()

    if cfg.embed_norm:  # the embedding norm mixes token and position: one part, after it
        embedding = {"embeddings": float(read("resid_pre", 0)[position] @ u)}
    else:
        embedding = {"token": float(read("embed")[position] @ u)}
        if stack.embed.adds_positions:
            embedding["position"] = float(trace[stage_name("pos_embed")][position].double() @ u)  # [pos, d_model]
        if cfg.n_token_types:
            embedding["segments"] = float(read("token_type_embed")[position] @ u)
    heads, ffn, attn_bias, ffn_bias, attn_dirs = [], [], [], [], []
    for layer, block in enumerate(cast(list[Block], list(stack.blocks))):
        w_o = block.attn.W_O
        u_attn = u * post_gain(block, "ln1_post", trace, layer, position)  # [d_model]
        u_ffn = u * post_gain(block, "ln2_post", trace, layer, position)
        attn_dirs.append(u_attn)
        head_dirs = (u_attn @ w_o.weight.double()).view(cfg.n_heads, cfg.d_head)  # [head, d_head]: u W_O^h
        heads.append((read("z", layer)[position] * head_dirs).sum(-1))  # [head]
        # a mixture of experts (model/moe.py) has no bias: its part is its traced output, the sum of the experts
        # the real run chose, weighted as the router weighted them (the routing is that run's, held as it was)
        out_bias = block.mlp.W_out.bias if isinstance(block.mlp, MLP) else None
        mlp_out = read("mlp_out", layer)[position]  # [d_model], after the post norm where there is one
        ffn.append(mlp_out @ u - (out_bias.double() @ u_ffn if out_bias is not None else 0.0))
        if w_o.bias is not None:
            attn_bias.append(w_o.bias.double() @ u_attn)
        if out_bias is not None:
            ffn_bias.append(out_bias.double() @ u_ffn)
    head_parts = torch.stack(heads)  # [layer, head]
    return LogitAttribution(
        position=position, target=target, versus=versus, heads=head_parts, ffn=torch.stack(ffn),
        attn_bias=torch.stack(attn_bias) if attn_bias else None, ffn_bias=torch.stack(ffn_bias) if ffn_bias else None,
        embedding=embedding, final_norm_bias=constant if cfg.final_norm and cfg.norm == "layernorm" else None,
        norm=cfg.norm if cfg.final_norm else None, norm_scale=sigma, logit=logit,
        top=top_heads(model, trace, head_parts, attn_dirs, position, top),
    )


def post_gain(block: Block, norm: str, trace: Mapping[str, torch.Tensor], layer: int,
              position: int) -> torch.Tensor | float:
    """w / σ_p of the RMSNorm `norm` ("ln1_post", "ln2_post") after a sub-layer, σ_p frozen at its traced value:
    what that sub-layer's raw output is multiplied by on its way into the stream; 1.0 without post_norms."""
    if not block.post_norms:
        return 1.0
    sigma = float(trace[stage_name(f"{norm}.scale", layer)][0, position])
    return cast(torch.Tensor, getattr(block, norm).w).double() / sigma


def top_heads(model: Transformer, trace: Mapping[str, torch.Tensor], head_parts: torch.Tensor,
              attn_dirs: list[torch.Tensor], position: int, top: int) -> list[SourceSplit]:
    """The `top` heads with the largest |part|, each split by key: a_pj · (v_j W_O^h) · u (u ⊙ w / σ after a
    post norm: attn_dirs[layer])."""
    n_heads = head_parts.shape[1]
    order = head_parts.flatten().abs().argsort(descending=True)[:top].tolist()
    splits = []
    for index in order:
        layer, head = divmod(index, n_heads)
        attn = cast(Block, model.stack_named(None).blocks[layer]).attn
        weights = trace[stage_name("pattern", layer)][0, head, position].double()  # [k_pos]
        moved = projected_values(attn, trace[stage_name("v", layer)][0])[head] @ attn_dirs[layer]  # [k_pos]
        sources = weights * moved
        contribution = float(head_parts[layer, head])
        splits.append(SourceSplit(layer, head, contribution, sources.tolist(),
                                  abs(float(sources.sum()) - contribution)))
    return splits
