"""A mixture of experts (Qwen3-MoE): the FFN of a layer as a router over several gated FFNs.

    probs   = softmax(W_router · x)                       each token's probability for every expert
    chosen  = the n_experts_used experts of highest probability
    weight  = probs[chosen] (÷ their sum with expert_norm_topk)
    out     = Σ over chosen e of weight_e · W_out_e · (act(W_gate_e · x) ⊙ W_in_e · x)

Only the chosen experts run, and each only on the tokens that chose it, so a model with 128 experts of which 8 are
used computes about 8/128 of its expert weights per token. Stored weights (model/stored_weights.py) make that hold
for memory too: an expert's matrices are dequantized only when some token is routed to it.

Qwen3.5-MoE adds a shared expert (cfg.shared_expert_d_mlp): a gated FFN of its own width that every token goes
through, beside its chosen experts, its output scaled per token by a gate of its own:

    shared_gate = sigmoid(W_shared_gate · x)                  one number per token, from 0 to 1
    out        += shared_gate · W_out_s · (act(W_gate_s · x) ⊙ W_in_s · x)

Qwen3-MoE has none.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from model.config import GATED_ACTIVATIONS, TransformerConfig
from model.ffn import MLP
from model.hooks import HookPoint


def activate(name: str, h: torch.Tensor) -> torch.Tensor:
    """The gate's elementwise function (silu for SwiGLU)."""
    if name == "silu":
        return F.silu(h)
    if name == "relu":
        return F.relu(h)
    return F.gelu(h, approximate="tanh" if name == "gelu_tanh" else "none")


class Expert(nn.Module):
    """One expert: a gated FFN of its own, W_out · (act(W_gate · x) ⊙ W_in · x), no biases."""

    def __init__(self, cfg: TransformerConfig, width: int | None = None) -> None:
        super().__init__()
        width = cfg.expert_width if width is None else width  # the shared expert's is its own
        self.act = GATED_ACTIVATIONS[cfg.activation]
        self.W_gate = nn.Linear(cfg.d_model, width, bias=False)
        self.W_in = nn.Linear(cfg.d_model, width, bias=False)
        self.W_out = nn.Linear(width, cfg.d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: [n, d_model], the tokens routed here -> [n, d_model]."""
        return self.W_out(activate(self.act, self.W_gate(x)) * self.W_in(x))


def routed(experts: nn.ModuleList, weights: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """x [batch, pos, d_model], weights [batch, pos, expert] -> Σ over e of weight_e · expert_e(x), each expert run
    only on the tokens that give it a weight other than 0 -> [batch, pos, d_model]."""
    weights, flat = weights.flatten(0, 1), x.flatten(0, 1)  # [batch·pos, expert], [batch·pos, d_model]
    out = torch.zeros_like(flat)
    for expert in (weights != 0).any(dim=0).nonzero()[:, 0].tolist():  # the experts some token uses, in order
        tokens = (weights[:, expert] != 0).nonzero()[:, 0]  # [n]
        part = experts[expert](flat[tokens]) * weights[tokens, expert, None]  # [n, d_model]
        out = out.index_add(0, tokens, part)
    return out.view_as(x)


class MoE(nn.Module):
    """The router and its experts, in place of a layer's MLP (its module is still `mlp`, its output mlp_out).

    Stages: `router_logits` (W_router · x), `router_probs` (their softmax over the experts), `expert_weights`
    (each token's weight on every expert: the chosen ones' probabilities, renormalised with expert_norm_topk,
    0 for the experts not chosen). An edit of expert_weights changes the routing: an expert runs on exactly the
    tokens that give it a weight other than 0. With a shared expert (Qwen3.5-MoE) also `shared_gate` (its
    sigmoid gate, one number per token) and `shared_out` (its output times that gate, added to the routed sum).
    """

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.top_k = cfg.n_experts_used
        self.renormalize = cfg.expert_norm_topk
        self.W_router = nn.Linear(cfg.d_model, cfg.n_experts, bias=False)
        self.experts = nn.ModuleList(Expert(cfg) for _ in range(cfg.n_experts))
        dims = ("batch", "pos", "expert")
        self.hook_router_logits = HookPoint(dims)
        self.hook_router_probs = HookPoint(dims)
        self.hook_expert_weights = HookPoint(dims)
        self.shared_expert: Expert | None = None
        if cfg.shared_expert_d_mlp is not None:  # Qwen3.5-MoE: an expert every token uses, gated per token
            self.shared_expert = Expert(cfg, cfg.shared_expert_d_mlp)
            self.W_shared_gate = nn.Linear(cfg.d_model, 1, bias=False)
            self.hook_shared_gate = HookPoint(("batch", "pos"))
            self.hook_shared_out = HookPoint(("batch", "pos", "d_model"))

    def routing(self, x: torch.Tensor) -> torch.Tensor:
        """x: [batch, pos, d_model] -> each token's weight on each expert [batch, pos, expert] (0: not chosen)."""
        logits = self.hook_router_logits(self.W_router(x))  # [batch, pos, expert]
        probs = self.hook_router_probs(torch.softmax(logits, dim=-1))
        top, chosen = probs.topk(self.top_k, dim=-1)  # [batch, pos, top_k]
        if self.renormalize:
            top = top / top.sum(dim=-1, keepdim=True)
        return self.hook_expert_weights(torch.zeros_like(probs).scatter(-1, chosen, top))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: [batch, pos, d_model] -> [batch, pos, d_model]: each token's chosen experts, weighted and summed."""
        out = routed(self.experts, self.routing(x), x)
        if self.shared_expert is not None:
            gate = self.hook_shared_gate(torch.sigmoid(self.W_shared_gate(x))[..., 0])  # [batch, pos]
            out = out + self.hook_shared_out(self.shared_expert(x) * gate[..., None])  # [batch, pos, d_model]
        return out


def rms(x: torch.Tensor, eps: float) -> torch.Tensor:
    """x / √(mean(x²) + eps) over d_model: an RMSNorm before its gain."""
    return x * (x.pow(2).mean(-1, keepdim=True) + eps).pow(-0.5)


class FfnBesideExperts(MLP):
    """Gemma 4's mixture-of-experts block (26B-A4B): the layer's FFN and a mixture of experts side by side.

        dense   = norm_1(FFN(ln2(h)))                                  dense_out; the FFN's own stages (pre, gate, ...)
        r       = rms(h) ⊙ router_scale / √d_model                     router_in: the router reads the stream h itself
        probs   = softmax(W_router · r)                                router_logits, router_probs
        weight  = the top-k probs ÷ their sum, × per_expert_scale[e]     (expert_weights)
        experts = norm_2(Σ over chosen e of weight_e · expert_e(norm_pre(h)))     experts_in: norm_pre(h); experts_out
        out     = dense + experts                                      (then the block's ln2_post, as any Gemma FFN)

    norm_1, norm_2, norm_pre: RMSNorms with gains of their own; rms: without a gain. The two summands are stages,
    `dense_out` and `experts_out` (each after its norm, so out is exactly their sum), and so are the two readings of
    the stream, `router_in` and `experts_in`: the router and the experts each see h normalised their own way.
    """

    def __init__(self, cfg: TransformerConfig, layer: int = 0) -> None:
        super().__init__(cfg, layer)
        self.top_k, self.eps, self.d_model = cfg.n_experts_used, cfg.norm_eps, cfg.d_model
        self.W_router = nn.Linear(cfg.d_model, cfg.n_experts, bias=False)
        self.router_scale = nn.Parameter(torch.ones(cfg.d_model))
        self.per_expert_scale = nn.Parameter(torch.ones(cfg.n_experts))
        self.experts = nn.ModuleList(Expert(cfg) for _ in range(cfg.n_experts))
        self.norm_dense_w = nn.Parameter(torch.ones(cfg.d_model))
        self.norm_experts_in_w = nn.Parameter(torch.ones(cfg.d_model))
        self.norm_experts_out_w = nn.Parameter(torch.ones(cfg.d_model))
        dims = ("batch", "pos", "expert")
        self.hook_router_in = HookPoint(("batch", "pos", "d_model"))  # what the router and the experts read of h
        self.hook_experts_in = HookPoint(("batch", "pos", "d_model"))
        self.hook_router_logits = HookPoint(dims)
        self.hook_router_probs = HookPoint(dims)
        self.hook_expert_weights = HookPoint(dims)
        self.hook_dense_out = HookPoint(("batch", "pos", "d_model"))  # the two summands, each after its norm
        self.hook_experts_out = HookPoint(("batch", "pos", "d_model"))

    def forward(self, x: torch.Tensor, stream: torch.Tensor | None = None) -> torch.Tensor:  # type: ignore[override]
        """x: ln2(h), stream: h, both [batch, pos, d_model] -> the dense FFN's and the experts' outputs, each normed,
        summed [batch, pos, d_model]."""
        if stream is None:
            raise ValueError("Gemma 4's mixture of experts reads the residual stream beside the FFN's input")
        dense = self.hook_dense_out(rms(super().forward(x), self.eps) * self.norm_dense_w)  # [batch, pos, d_model]
        routed_in = self.hook_router_in(rms(stream, self.eps) * self.router_scale * self.d_model ** -0.5)
        logits = self.hook_router_logits(self.W_router(routed_in))  # [batch, pos, expert]
        probs = self.hook_router_probs(torch.softmax(logits, dim=-1))
        top, chosen = probs.topk(self.top_k, dim=-1)  # [batch, pos, top_k]
        top = top / top.sum(dim=-1, keepdim=True) * self.per_expert_scale[chosen]
        weights = self.hook_expert_weights(torch.zeros_like(probs).scatter(-1, chosen, top))
        experts = routed(self.experts, weights, self.hook_experts_in(rms(stream, self.eps) * self.norm_experts_in_w))
        return dense + self.hook_experts_out(rms(experts, self.eps) * self.norm_experts_out_w)  # [batch, pos, d_model]
