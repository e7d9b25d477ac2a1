"""Gemma 4's per-layer inputs: a second, small embedding of each token for every layer, which each block gates into
its residual stream after its FFN (transformers' "per-layer embeddings", PLE; llama.cpp's per_layer_token_embd).

    token part    e_l(t) = W_PLE[t, l] · √P                               [P] per layer l (P = per_layer_input)
    context part  c_l(x) = rmsnorm(W_PLM · x / √d_model)[l] ⊙ w           x: the token's embedding (× √d_model)
    input         p_l = (e_l + c_l) / √2
    block l       h ← h + norm(W_up · (gelu_tanh(W_gate · h) ⊙ p_l))      after the FFN's residual

The stack computes every layer's p_l once, from the token and its embedding (`PerLayerInputs`); block l reads its
slice (`PerLayerGate`). Each block's output can then be scaled by a learned scalar (cfg.layer_scalar).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from model.config import TransformerConfig
from model.hooks import HookPoint


class PerLayerInputs(nn.Module):
    """Every layer's per-layer input p_l, from the tokens and their (scaled) embeddings.  -> [batch, pos, layer, P]

    Its stages are the stack's (hook points on the Stack: `pli_token`, `pli_context`, `pli`), handed in."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        assert cfg.per_layer_input is not None
        self.n_layers, self.width, self.eps, self.d_model = cfg.n_layers, cfg.per_layer_input, cfg.norm_eps, cfg.d_model
        self.W_E = nn.Embedding(cfg.vocab_size, cfg.n_layers * cfg.per_layer_input)  # [vocab, layer·P]
        self.W_proj = nn.Linear(cfg.d_model, cfg.n_layers * cfg.per_layer_input, bias=False)
        self.w = nn.Parameter(torch.ones(cfg.per_layer_input))  # the context part's RMSNorm gain, shared by layers

    def forward(self, tokens: torch.Tensor, embed: torch.Tensor,
                hooks: tuple[HookPoint, HookPoint, HookPoint]) -> torch.Tensor:
        """tokens: [batch, pos]; embed: [batch, pos, d_model], the token vectors as the blocks first see them."""
        token_hook, context_hook, input_hook = hooks
        batch, n_pos = tokens.shape
        shape = (batch, n_pos, self.n_layers, self.width)
        token_part = token_hook(self.W_E(tokens).view(shape) * math.sqrt(self.width))  # [batch, pos, layer, P]
        context = self.W_proj(embed).view(shape) / math.sqrt(self.d_model)  # [batch, pos, layer, P]
        context = context / (context.pow(2).mean(-1, keepdim=True) + self.eps).sqrt() * self.w
        context_part = context_hook(context)
        return input_hook((token_part + context_part) / math.sqrt(2.0))  # [batch, pos, layer, P]


class PerLayerGate(nn.Module):
    """Block l's use of its per-layer input: h ← h + norm(W_up · (gelu_tanh(W_gate · h) ⊙ p_l)).

    Its stages are the block's (`pli_input`, `pli_gated`, `pli_out`), handed in."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        assert cfg.per_layer_input is not None
        self.W_gate = nn.Linear(cfg.d_model, cfg.per_layer_input, bias=False)
        self.W_up = nn.Linear(cfg.per_layer_input, cfg.d_model, bias=False)

    def forward(self, h: torch.Tensor, per_layer_input: torch.Tensor, norm: nn.Module,
                hooks: tuple[HookPoint, HookPoint, HookPoint]) -> torch.Tensor:
        """h: [batch, pos, d_model]; per_layer_input: [batch, pos, P] -> what joins the stream [batch, pos, d_model]"""
        input_hook, gated_hook, out_hook = hooks
        p = input_hook(per_layer_input)  # [batch, pos, P]
        gated = gated_hook(F.gelu(self.W_gate(h), approximate="tanh") * p)  # [batch, pos, P]
        return out_hook(norm(self.W_up(gated)))  # norm: the block's ln_pli (RMSNorm, own gain)  # [batch, pos, d_model]


class PerLayerParts(nn.Module):
    """What a block (model/layers.py Block) may have of Gemma 4, as its own modules and stages
    (`blocks.L.hook_pli_input`, ...): the gate of its per-layer input with its norm `ln_pli`, and the learned
    scalar its output is multiplied by."""

    def add_per_layer(self, cfg: TransformerConfig, norm: type[nn.Module]) -> bool:
        """Add them where the model has them; False (and nothing added) for a model without either."""
        dims = ("batch", "pos", "d_model")
        self.has_pli, self.has_scalar = cfg.per_layer_input is not None, cfg.layer_scalar
        if self.has_pli:
            self.pli = PerLayerGate(cfg)
            self.ln_pli = norm(cfg)
            self.hook_pli_input = HookPoint(("batch", "pos", "d_pli"))  # p_l, this layer's slice
            self.hook_pli_gated = HookPoint(("batch", "pos", "d_pli"))  # gelu_tanh(W_gate · h) ⊙ p_l
            self.hook_pli_out = HookPoint(dims)  # norm(W_up · gated): what joins the stream
        if self.has_scalar:
            self.layer_scalar = nn.Parameter(torch.ones(1))
            self.hook_resid_unscaled = HookPoint(dims)  # the stream before the layer's scalar
        return self.has_pli or self.has_scalar

    def finish_block(self, x: torch.Tensor, per_layer_input: torch.Tensor | None) -> torch.Tensor:
        """After the FFN's residual x [batch, pos, d_model]: add the gated per-layer input, then scale by the
        layer's scalar, each where the model has it."""
        if self.has_pli:
            if per_layer_input is None:
                raise ValueError("this block adds a per-layer input: the stack computes it from the tokens")
            x = x + self.pli(x, per_layer_input, self.ln_pli, (self.hook_pli_input, self.hook_pli_gated,
                                                               self.hook_pli_out))
        if self.has_scalar:
            x = self.hook_resid_unscaled(x) * self.layer_scalar
        return x  # [batch, pos, d_model]


def refuse_resume(cfg: TransformerConfig, first: int) -> None:
    """A pass that starts at block `first` from a residual stream alone (Stack.resume: patching, lenses that run the
    rest) lacks what Gemma 4's blocks read besides it: raise a ValueError naming it."""
    if cfg.per_layer_input is not None:
        raise ValueError("this model adds a per-layer input embedding of the tokens in every block: a pass resumed "
                         "from the residual stream alone does not have it")
    if any(cfg.kv_source_of(layer) < first <= layer for layer in range(cfg.n_layers)):
        raise ValueError("this model's later layers attend with the K and V of earlier layers (K/V shared across "
                         "layers): a pass resumed after those layers does not have them")
