"""Gated DeltaNet (Qwen3.5's linear-attention layers): an RNN whose state is a matrix, written by the delta rule.

Per value head h (several value heads share one key head), at each token t, in the order of the stages:

    q, k, v, z, a, b = split(W_qkv · x, W_z · x, W_a · x, W_b · x)      the fused projection, split
    q, k, v = silu(causal_conv(q, k, v))                                  a short convolution over the last tokens
    q = q / (‖q‖ · √d_key);  k = k / ‖k‖                                  unit-length keys (and queries, scaled)
    g = −exp(A_log) · softplus(a + dt_bias);   β = sigmoid(b)              the decay (log of a factor in (0, 1)) and
                                                                          the write strength
    S_t = exp(g_t) · S_{t−1} + β_t · (v_t − exp(g_t) · S_{t−1} k_t) k_tᵀ     the state update: [d_value, d_key]
    o_t = S_t q_t                                                          the read-out
    y = W_O · (rmsnorm(o_t) · w ⊙ silu(z_t))                                the gated RMSNorm, then the projection

The state is stored as the equation writes it, S [d_value, d_key] (S k reads a value), and computed in the
recurrent form, one token after the other, as the equation reads. transformers' chunked form (64 tokens at a time)
is the same function: tests/model/test_deltanet.py compares the two. The state is fixed-size: a DeltaNet layer's
"cache" is S and the convolution's last kernel − 1 inputs, whatever the length of the text.

What the trace keeps of the state (memory bounded whatever the text): `hook_state` is S after the text's last
token, [batch, head, d_value, d_key] (the state at an earlier token is the last state of the text cut there: the
layer is causal), and `hook_state_change` how much of S each token changed, per head: ‖S_t − S_{t−1}‖ over the
larger of ‖S_t‖ and ‖S_{t−1}‖ (1 at the first token, which writes a state from nothing; 0 when nothing moves).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from model.config import TransformerConfig
from model.hooks import HookPoint
from model.kv_cache import LayerKV

L2_EPS = 1e-6  # transformers' (and the fla kernels') l2norm: x / sqrt(Σx² + eps)


def l2_normalize(x: torch.Tensor) -> torch.Tensor:
    """x / sqrt(Σ x² + 1e-6) over the last dimension (each head's vector to unit length)."""
    return x * torch.rsqrt(x.pow(2).sum(-1, keepdim=True) + L2_EPS)


class GatedDeltaNet(nn.Module):
    """One gated DeltaNet layer: the block's token mixer where attention would be (model.layers.Block)."""

    def __init__(self, cfg: TransformerConfig, layer: int = 0) -> None:
        super().__init__()
        assert cfg.deltanet_key_heads and cfg.deltanet_value_heads and cfg.deltanet_key_dim \
            and cfg.deltanet_value_dim and cfg.deltanet_conv  # checked by the config
        self.key_heads, self.heads = cfg.deltanet_key_heads, cfg.deltanet_value_heads
        self.d_key, self.d_value, self.kernel = cfg.deltanet_key_dim, cfg.deltanet_value_dim, cfg.deltanet_conv
        self.eps = cfg.norm_eps
        key_width, value_width = self.key_heads * self.d_key, self.heads * self.d_value
        self.conv_width = 2 * key_width + value_width  # q, k and v side by side: what the convolution reads
        self.W_qkv = nn.Linear(cfg.d_model, self.conv_width, bias=False)
        self.W_z = nn.Linear(cfg.d_model, value_width, bias=False)
        self.W_a = nn.Linear(cfg.d_model, self.heads, bias=False)
        self.W_b = nn.Linear(cfg.d_model, self.heads, bias=False)
        self.conv_w = nn.Parameter(torch.zeros(self.conv_width, self.kernel))  # one filter per channel
        self.A_log = nn.Parameter(torch.zeros(self.heads))
        self.dt_bias = nn.Parameter(torch.ones(self.heads))
        self.norm_w = nn.Parameter(torch.ones(self.d_value))  # the gated RMSNorm's gain, shared by the heads
        self.W_O = nn.Linear(value_width, cfg.d_model, bias=False)
        keys = ("batch", "pos", "key_head", "d_key")
        values = ("batch", "pos", "head", "d_value")
        gates = ("batch", "pos", "head")  # one number per token and value head
        self.hook_split_q = HookPoint(keys)
        self.hook_split_k = HookPoint(keys)
        self.hook_split_v = HookPoint(values)
        self.hook_split_z = HookPoint(values)
        self.hook_split_a = HookPoint(gates)
        self.hook_split_b = HookPoint(gates)
        self.hook_conv_q = HookPoint(keys)
        self.hook_conv_k = HookPoint(keys)
        self.hook_conv_v = HookPoint(values)
        self.hook_query = HookPoint(keys)
        self.hook_key = HookPoint(keys)
        self.hook_decay = HookPoint(gates)
        self.hook_beta = HookPoint(gates)
        self.hook_state_change = HookPoint(gates)
        self.hook_state = HookPoint(("batch", "head", "d_value", "d_key"))
        self.hook_read = HookPoint(values)
        self.hook_gated = HookPoint(values)

    def forward(self, x: torch.Tensor, real: torch.Tensor | None = None, cache: LayerKV | None = None) -> torch.Tensor:
        """x: [batch, pos, d_model]; real: bool [batch, pos], False at padding (zeroed, as transformers does);
        cache: the state and the convolution's last inputs from the tokens before (decoding), updated."""
        batch, n_pos, _ = x.shape
        if real is not None:
            x = x * real[..., None].to(x.dtype)
        key_width = self.key_heads * self.d_key
        # 1) the fused projection, split into q, k, v (what the convolution reads), the output gate z and a, b
        mixed = self.W_qkv(x)  # [batch, pos, conv_width]
        q = self.hook_split_q(mixed[..., :key_width].view(batch, n_pos, self.key_heads, self.d_key))
        k = self.hook_split_k(mixed[..., key_width:2 * key_width].view(batch, n_pos, self.key_heads, self.d_key))
        v = self.hook_split_v(mixed[..., 2 * key_width:].view(batch, n_pos, self.heads, self.d_value))
        z = self.hook_split_z(self.W_z(x).view(batch, n_pos, self.heads, self.d_value))
        a = self.hook_split_a(self.W_a(x))  # [batch, pos, head]
        b = self.hook_split_b(self.W_b(x))  # [batch, pos, head]
        # 2) the causal short convolution: each channel mixes its last `kernel` tokens, then silu
        mixed = torch.cat((q.flatten(2), k.flatten(2), v.flatten(2)), dim=-1)  # [batch, pos, conv_width]
        before = cache.conv if cache is not None and cache.conv is not None else \
            mixed.new_zeros(batch, self.kernel - 1, self.conv_width)  # the tokens before the first: zeros
        window = torch.cat((before, mixed), dim=1)  # [batch, kernel - 1 + pos, conv_width]
        conv = F.silu(F.conv1d(window.transpose(1, 2), self.conv_w[:, None, :], groups=self.conv_width))
        conv = conv.transpose(1, 2)  # [batch, pos, conv_width]
        q = self.hook_conv_q(conv[..., :key_width].reshape(batch, n_pos, self.key_heads, self.d_key))
        k = self.hook_conv_k(conv[..., key_width:2 * key_width].reshape(batch, n_pos, self.key_heads, self.d_key))
        v = self.hook_conv_v(conv[..., 2 * key_width:].reshape(batch, n_pos, self.heads, self.d_value))
        # 3) unit-length keys and queries (queries ÷ √d_key as attention scales its scores), the decay and β
        q = self.hook_query(l2_normalize(q) / self.d_key ** 0.5)
        k = self.hook_key(l2_normalize(k))
        g = self.hook_decay(-self.A_log.float().exp() * F.softplus(a.float() + self.dt_bias))  # [batch, pos, head]
        beta = self.hook_beta(torch.sigmoid(b))  # [batch, pos, head]
        # 4) the recurrence, one token after the other; value head h reads key head h // (heads / key_heads)
        group = self.heads // self.key_heads
        q, k = q.repeat_interleave(group, dim=2), k.repeat_interleave(group, dim=2)  # [batch, pos, head, d_key]
        state = cache.state.clone() if cache is not None and cache.state is not None else \
            x.new_zeros(batch, self.heads, self.d_value, self.d_key)  # S [batch, head, d_value, d_key], ours alone
        state, read, change = recurrence(state, q, k, v, g.exp(), beta)
        self.hook_state_change(change)  # [batch, pos, head]
        self.hook_state(state)  # [batch, head, d_value, d_key], after the last token
        read = self.hook_read(read)  # [batch, pos, head, d_value]
        if cache is not None:
            cache.state, cache.conv, cache.seen = state, window[:, window.shape[1] - (self.kernel - 1):], \
                cache.seen + n_pos
        # 5) the gated RMSNorm (each head's read-out normalized, times w, times silu of the output gate z), W_O
        normed = read * torch.rsqrt(read.pow(2).mean(-1, keepdim=True) + self.eps) * self.norm_w
        gated = self.hook_gated(normed * F.silu(z))  # [batch, pos, head, d_value]
        return self.W_O(gated.reshape(batch, n_pos, self.heads * self.d_value))  # [batch, pos, d_model]


def recurrence(state: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, kept: torch.Tensor,
               beta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The delta rule token by token: S_t = c_t S_{t−1} + w_t k_tᵀ with c_t = exp(g_t) and the correction
    w_t = β_t (v_t − c_t S_{t−1} k_t); the read-out o_t = S_t q_t. state [batch, head, d_value, d_key] (updated in
    place: a tensor of the caller's own), q, k [batch, pos, head, d_key], v [batch, pos, head, d_value], kept and
    beta [batch, pos, head]. Returns (S after the last token, o [batch, pos, head, d_value], the change
    ‖S_t − S_{t−1}‖ / max(‖S_t‖, ‖S_{t−1}‖) [batch, pos, head]).

    Each token passes over S three times: one product reads S_{t−1} k_t and S_{t−1} q_t together, then S is
    scaled and written. The rest needs vectors alone, so it is computed for every token at once after the loop:
    o_t = S_t q_t = c_t S_{t−1} q_t + w_t (k_t · q_t), and the norms from
    ‖a S + w kᵀ‖² = a²‖S‖² + 2a wᵀ(S k) + ‖w‖²‖k‖² (a = c_t for S_t, c_t − 1 for the change)."""
    batch, n_pos, heads, d_key = k.shape
    d_value = v.shape[-1]
    # time first, so that each token's slice is one contiguous block
    keys = k.transpose(0, 1).contiguous()  # [pos, batch, head, d_key]
    both = torch.stack((k, q), dim=-1).transpose(0, 1).contiguous()  # [pos, batch, head, d_key, 2]: k_t and q_t
    values, c, b = v.transpose(0, 1), kept.transpose(0, 1)[..., None], beta.transpose(0, 1)[..., None]
    size2 = state.pow(2).sum((-2, -1))  # ‖S_0‖²  [batch, head]
    flat = state.view(batch * heads, d_value, d_key)
    read_before, corrections = [], []
    for t in range(n_pos):
        k_t = keys[t]  # [batch, head, d_key]
        seen = state @ both[t]  # S_{t−1} k_t and S_{t−1} q_t  [batch, head, d_value, 2]
        w = torch.addcmul(values[t], c[t], seen[..., 0], value=-1.0).mul_(b[t])  # β_t (v_t − c_t S_{t−1} k_t)
        if torch.is_grad_enabled():  # autograd may need every S: out of place
            state = state * c[t][..., None] + w[..., None] * k_t[:, :, None, :]
        else:
            state.mul_(c[t][..., None])
            flat.baddbmm_(w.reshape(-1, d_value, 1), k_t.reshape(-1, 1, d_key))  # + w_t k_tᵀ
        read_before.append(seen)
        corrections.append(w)
    seen, w = torch.stack(read_before), torch.stack(corrections)  # [pos, batch, head, d_value, (2)]
    c = c[..., 0]  # [pos, batch, head]
    read = c[..., None] * seen[..., 1] + w * (k * q).sum(-1).transpose(0, 1)[..., None]  # o_t = S_t q_t
    cross, outer = (w * seen[..., 0]).sum(-1), w.pow(2).sum(-1) * keys.pow(2).sum(-1)  # wᵀ S k, ‖w‖²‖k‖²
    added, kept2 = 2 * c * cross + outer, c * c
    sizes = [size2]  # ‖S_0‖², then ‖S_t‖² one token after the other: [batch, head] each
    for t in range(n_pos):
        size2 = torch.addcmul(added[t], kept2[t], size2)
        sizes.append(size2)
    old2, new2 = torch.stack(sizes[:-1]), torch.stack(sizes[1:])  # ‖S_{t−1}‖², ‖S_t‖²  [pos, batch, head]
    diff2 = (c - 1) ** 2 * old2 + 2 * (c - 1) * cross + outer
    larger = torch.maximum(new2, old2).clamp_min(1e-30).sqrt()
    change = diff2.clamp_min(0).sqrt() / larger  # from 0 to 2
    return state, read.transpose(0, 1), change.transpose(0, 1)
