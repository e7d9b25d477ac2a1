"""The starting values of a hybrid's DeltaNet layers and attention norms, as transformers' Qwen3.5 starts them.

Transformer._init_weights draws every weight but the norm gains named `.w` from N(0, init_std): right for the
projections, wrong for what is not a projection. A gain near 0 (the gated norm's norm_w, attention's q_norm_w and
k_norm_w) silences its layer, and A_log, dt_bias near 0 give every head the same decay. So, after the model is
built: the gains at 1, dt_bias at 1 (as transformers' Qwen3_5GatedDeltaNet), A_log = log(A) with A uniform in
[1, 16] (heads that forget at different rates; transformers draws A from [0.01, 16], which also starts a few heads
that keep nearly all of S: tiny-deltanet was trained from [1, 16], where every head starts keeping at most
exp(−softplus(1)) ≈ 27 % of S per token) and each convolution filter uniform in ±1/√kernel (torch's Conv1d default).
"""

from __future__ import annotations

import math

import torch

from model.deltanet import GatedDeltaNet
from model.transformer import Transformer


def init_hybrid(model: Transformer, seed: int) -> int:
    """Re-initialize the DeltaNet layers' non-projection parameters and attention's q/k norm gains in place;
    returns how many DeltaNet layers were set (0 for a model without any: nothing changes)."""
    generator = torch.Generator().manual_seed(seed)
    layers = 0
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith(("attn.q_norm_w", "attn.k_norm_w")):
                param.fill_(1.0)
        for module in model.modules():
            if not isinstance(module, GatedDeltaNet):
                continue
            layers += 1
            module.norm_w.fill_(1.0)
            module.dt_bias.fill_(1.0)
            decay = torch.empty(module.heads).uniform_(1.0, 16.0, generator=generator)
            module.A_log.copy_(decay.log())
            bound = 1.0 / math.sqrt(module.kernel)
            module.conv_w.copy_(torch.empty(module.conv_w.shape).uniform_(-bound, bound, generator=generator))
    return layers
