"""The FFN (MLP) applied to each position alone, plain or gated; a mixture of experts (model/moe.py) is built of
gated ones. Shape comments in the trace's words: batch, pos, d_model, d_mlp."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from model.config import GATED_ACTIVATIONS, TransformerConfig
from model.hooks import HookPoint


class MLP(nn.Module):
    """FFN applied to each position alone: W_out · act(W_in · x).

    Gated (SwiGLU; GEGLU and ReGLU use GELU or ReLU on the gate): W_out · (act(W_gate · x) ⊙ (W_in · x));
    `hook_pre` is W_gate · x (what the activation sees), `hook_gate` its act, `hook_up` the linear branch W_in · x.
    """

    def __init__(self, cfg: TransformerConfig, layer: int = 0) -> None:
        super().__init__()
        self.gated = cfg.gated
        self.act = GATED_ACTIVATIONS.get(cfg.activation, cfg.activation)  # the elementwise function
        width = cfg.mlp_width_of(layer)  # Gemma 4: twice as wide in the layers that share K/V
        self.W_in = nn.Linear(cfg.d_model, width, bias=cfg.use_mlp_bias)
        dims = ("batch", "pos", "d_mlp")
        self.hook_pre = HookPoint(dims)
        if self.gated:
            self.W_gate = nn.Linear(cfg.d_model, width, bias=cfg.use_mlp_bias)
            self.hook_gate = HookPoint(dims)
            self.hook_up = HookPoint(dims)
        self.hook_post = HookPoint(dims)
        self.W_out = nn.Linear(width, cfg.d_model, bias=cfg.use_mlp_bias)

    def activation(self, h: torch.Tensor) -> torch.Tensor:
        if self.act == "relu":
            return F.relu(h)
        if self.act == "gelu":
            return F.gelu(h)
        if self.act == "silu":
            return F.silu(h)
        return F.gelu(h, approximate="tanh")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.gated:
            pre = self.hook_pre(self.W_gate(x))  # [batch, pos, d_mlp]
            gate = self.hook_gate(self.activation(pre))
            up = self.hook_up(self.W_in(x))
            post = self.hook_post(gate * up)
        else:
            pre = self.hook_pre(self.W_in(x))  # [batch, pos, d_mlp]
            post = self.hook_post(self.activation(pre))
        return self.W_out(post)  # [batch, pos, d_model]
