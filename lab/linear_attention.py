"""Linear attention (Katharopoulos et al. 2020, "Transformers are RNNs") on one head's real q, k, v.

Softmax attention weighs key j for query i by exp(q_i·k_j · scale), normalised over the row. Linear
attention replaces the exponential by a dot product of positive features, φ(x) = elu(x) + 1 > 0:

    weight_ij = φ(q_i)·φ(k_j) / Σ_j' φ(q_i)·φ(k_j')

so the output factors through two sums that do not depend on i (j ≤ i in a causal model, every j
in an encoder):

    S_i = Σ_j φ(k_j) v_jᵀ   [d_k, d_v]        z_i = Σ_j φ(k_j)   [d_k]
    output_i = φ(q_i)ᵀ S_i / φ(q_i)ᵀ z_i

The recurrent form carries S and z from token to token (a fixed-size state, O(n) time); the
quadratic form builds the n × n matrix of implied weights. Both are computed here and must agree.

The q, k, v are the trained model's (after RoPE where it rotates); nothing is retrained. So this
shows the form and what a positive kernel cannot do (a row as peaked as exp allows), not how good a
model trained with linear attention would be. The linear forms run in float64: the two forms differ
in summation order only, and the comparison is about the algebra, not float32 rounding.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from lab.flash import HeadInputs, alibi_tile, head_inputs, visible
from model.hooks import attention_layer
from model.layers import soft_cap
from model.transformer import Transformer

# ---------------------------------------------------------------- the two attentions


def feature_map(x: torch.Tensor) -> torch.Tensor:
    """φ(x) = elu(x) + 1: x + 1 for x > 0, exp(x) otherwise; always > 0.  [..., d_k] -> [..., d_k]"""
    return F.elu(x) + 1.0


def softmax_weights(head: HeadInputs) -> torch.Tensor:
    """The model's own weights A = softmax(mask(cap(q·kᵀ · scale + ALiBi bias))).  -> [q_pos, k_pos]
    cap: Gemma 2's soft cap, cap·tanh(score / cap), where the model has one."""
    q_len, k_len = head.q.shape[0], head.k.shape[0]
    q_pos, k_pos = torch.arange(q_len, device=head.q.device), torch.arange(k_len, device=head.q.device)
    scores = head.q @ head.k.T * head.scale  # [q_pos, k_pos]
    if head.alibi_slope is not None:
        scores = scores + alibi_tile(torch.tensor(head.alibi_slope, dtype=scores.dtype), q_pos, k_pos, head.causal)
    if head.softcap is not None:
        scores = soft_cap(scores, head.softcap)
    if not (head.causal or head.window is not None):
        return torch.softmax(scores, dim=-1)
    seen = visible(q_pos, k_pos, head.causal, head.window)  # [q_pos, k_pos]
    pattern = torch.softmax(scores.masked_fill(~seen, float("-inf")), dim=-1)
    return pattern.masked_fill(~seen.any(-1, keepdim=True), 0.0)  # only a query that sees no key attends nowhere


def linear_weights(q: torch.Tensor, k: torch.Tensor, *, causal: bool) -> torch.Tensor:
    """The quadratic form's implied weights φ(q_i)·φ(k_j) / Σ_j' φ(q_i)·φ(k_j').  q [q_pos, d_k], k [k_pos, d_k]
    -> [q_pos, k_pos]; causal: only j ≤ i (q_pos = k_pos)."""
    kernel = feature_map(q.double()) @ feature_map(k.double()).T  # [q_pos, k_pos], every entry > 0
    if causal:
        kernel = torch.tril(kernel)
    return kernel / kernel.sum(dim=-1, keepdim=True)


def linear_quadratic(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    """Linear attention as weights times values.  -> [q_pos, d_v] (float64)"""
    return linear_weights(q, k, causal=causal) @ v.double()


def linear_recurrent(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    """Linear attention as an RNN: one step per key adds φ(k_j) v_jᵀ to S and φ(k_j) to z; a query reads
    φ(q_i)ᵀ S / φ(q_i)ᵀ z. Causal: query i reads the state right after key i; else after the last key.
    q [q_pos, d_k], k [k_pos, d_k], v [k_pos, d_v] -> [q_pos, d_v] (float64)"""
    phi_q, phi_k, values = feature_map(q.double()), feature_map(k.double()), v.double()
    state = phi_k.new_zeros(phi_k.shape[1], values.shape[1])  # S [d_k, d_v]
    norm = phi_k.new_zeros(phi_k.shape[1])  # z [d_k]
    out = values.new_zeros(q.shape[0], values.shape[1])  # [q_pos, d_v]
    for j in range(k.shape[0]):
        state = state + torch.outer(phi_k[j], values[j])
        norm = norm + phi_k[j]
        if causal:
            out[j] = phi_q[j] @ state / (phi_q[j] @ norm)
    if not causal:
        out = phi_q @ state / (phi_q @ norm)[:, None]
    return out


# ---------------------------------------------------------------- what the linear kernel loses


def row_entropy(weights: torch.Tensor) -> torch.Tensor:
    """-Σ_j w_ij ln w_ij per row, in nats (0 · ln 0 = 0).  [q_pos, k_pos] -> [q_pos]"""
    w = weights.double()
    return -(torch.where(w > 0, w * w.clamp(min=1e-300).log(), torch.zeros_like(w))).sum(dim=-1)


def cosine_and_relative_error(reference: torch.Tensor, other: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per row: cos(reference_i, other_i) and ‖other_i − reference_i‖ / ‖reference_i‖.  [pos, d] -> [pos], [pos]"""
    a, b = reference.double(), other.double()
    norm_a, norm_b = a.norm(dim=-1), b.norm(dim=-1)
    cosine = (a * b).sum(dim=-1) / (norm_a * norm_b).clamp(min=1e-300)
    return cosine, (b - a).norm(dim=-1) / norm_a.clamp(min=1e-300)


@dataclass(frozen=True)
class Memory:
    """What one K/V head keeps while generating, in numbers (not bytes); from the formulas, not measured."""

    d_k: int
    d_v: int
    n: int
    state: int  # linear attention: S and z, d_k·d_v + d_k, whatever the length
    kv_cache: int  # softmax attention: every key and value so far, n·(d_k + d_v) (= 2·n·d_k when d_v = d_k)
    crossover: int  # the shortest n whose KV cache holds more numbers than the state

    def kv_cache_at(self, lengths: range) -> list[int]:
        """The KV cache's numbers at each length n: n·(d_k + d_v)."""
        return [n * (self.d_k + self.d_v) for n in lengths]

    def lengths(self) -> range:
        """0 to past both this text's n and twice the crossover (a chart's x axis)."""
        return range(max(2 * self.crossover, self.n + 2) + 1)


def memory(d_k: int, d_v: int, n: int) -> Memory:
    state = d_k * d_v + d_k
    per_token = d_k + d_v
    return Memory(d_k, d_v, n, state, n * per_token, state // per_token + 1)


# ---------------------------------------------------------------- one head of a real model


@dataclass(frozen=True)
class LinearAttention:
    head: HeadInputs
    softmax_weights: torch.Tensor  # [q_pos, k_pos]
    softmax_output: torch.Tensor  # [q_pos, d_head] = softmax_weights · v
    linear_weights: torch.Tensor  # [q_pos, k_pos], float64
    linear_output: torch.Tensor  # [q_pos, d_head], the recurrent form, float64
    max_diff_z: float  # max |softmax_output − the model's own head output (hook_z)|
    max_diff_pattern: float  # max |softmax_weights − the model's own weights (hook_pattern)|
    max_diff_forms: float  # max |recurrent − quadratic| of the linear output
    softmax_entropy: torch.Tensor  # [q_pos] nats
    linear_entropy: torch.Tensor  # [q_pos] nats
    softmax_max: torch.Tensor  # [q_pos]
    linear_max: torch.Tensor  # [q_pos]
    cosine: torch.Tensor  # [q_pos] cos(softmax output, linear output)
    relative_error: torch.Tensor  # [q_pos] ‖linear − softmax‖ / ‖softmax‖
    memory: Memory


def compare_on_head(head: HeadInputs, pattern: torch.Tensor) -> LinearAttention:
    """Softmax and linear attention on the same q, k, v; pattern: the model's weights [q_pos, k_pos]."""
    weights = softmax_weights(head)
    soft_out = weights @ head.v  # [q_pos, d_head]
    lin_weights = linear_weights(head.q, head.k, causal=head.causal)
    recurrent = linear_recurrent(head.q, head.k, head.v, causal=head.causal)
    quadratic = lin_weights @ head.v.double()
    cosine, relative = cosine_and_relative_error(soft_out, recurrent)
    empty = head.q.shape[0] == 0 or head.k.shape[0] == 0
    return LinearAttention(
        head=head, softmax_weights=weights, softmax_output=soft_out, linear_weights=lin_weights,
        linear_output=recurrent,
        max_diff_z=0.0 if empty else float((soft_out - head.z).abs().max()),
        max_diff_pattern=0.0 if empty else float((weights - pattern.float()).abs().max()),
        max_diff_forms=0.0 if empty else float((recurrent - quadratic).abs().max()),
        softmax_entropy=row_entropy(weights), linear_entropy=row_entropy(lin_weights),
        softmax_max=weights.amax(dim=-1) if not empty else weights.new_zeros(head.q.shape[0]),
        linear_max=lin_weights.amax(dim=-1) if not empty else lin_weights.new_zeros(head.q.shape[0]),
        cosine=cosine, relative_error=relative,
        memory=memory(head.k.shape[1], head.v.shape[1], head.k.shape[0]),
    )


def linear_attention_for_head(model: Transformer, trace: Mapping[str, torch.Tensor], layer: int, head: int, *,
                              stack: str | None = None, cross: bool = False) -> LinearAttention:
    """One head of a plain traced run (every stage, batch 1): its softmax beside linear attention."""
    inputs = head_inputs(model, trace, layer, head, stack=stack, cross=cross)
    pattern = trace[attention_layer(model.cfg, layer, stack, cross).stage("pattern")][0, head]  # [q_pos, k_pos]
    return compare_on_head(inputs, pattern)
