"""The gated DeltaNet layer's recurrent form (model/deltanet.py, one token after the other, as the equation reads)
equals transformers' chunked form (64 tokens at a time) and its own recurrent reference, on inputs the test draws:
150 tokens (three chunks), two value heads per key head; and its read-out and state change equal those computed on
every state."""

from __future__ import annotations

import pytest
import torch

from model.config import TransformerConfig
from model.deltanet import GatedDeltaNet
from model.kv_cache import LayerKV

qwen3_5 = pytest.importorskip("transformers.models.qwen3_5.modeling_qwen3_5")

CFG = TransformerConfig(vocab_size=32, d_model=32, n_layers=1, n_heads=2, pos_encoding="rope", norm="rmsnorm",
                        deltanet_layers=(0,), deltanet_key_heads=2, deltanet_value_heads=4, deltanet_key_dim=8,
                        deltanet_value_dim=12, deltanet_conv=4)


def layer(seed: int = 0) -> GatedDeltaNet:
    torch.manual_seed(seed)
    net = GatedDeltaNet(CFG)
    with torch.no_grad():
        for param in net.parameters():
            param.copy_(torch.randn_like(param) * 0.5)
        net.A_log.copy_(torch.empty(4).uniform_(0.01, 4).log())  # decays from mild to strong
    return net.eval()


def test_the_recurrent_form_equals_transformers_chunked_form() -> None:
    """The delta rule itself, on the layer's own q, k, v, g and β: ours (read off the trace) against
    torch_chunk_gated_delta_rule and torch_recurrent_gated_delta_rule."""
    from model.hooks import Trace

    net = layer()
    x = torch.randn(1, 150, CFG.d_model)
    names = [f"hook_{n}" for n in ("conv_q", "conv_k", "conv_v", "decay", "beta", "read", "state")]
    for module_name, module in net.named_modules():
        if hasattr(module, "dims"):
            module.name = module_name
    with torch.inference_mode(), Trace(names) as trace:
        net(x)
    args = dict(query=trace["hook_conv_q"], key=trace["hook_conv_k"], value=trace["hook_conv_v"],
                g=trace["hook_decay"], beta=trace["hook_beta"], output_final_state=True, use_qk_l2norm_in_kernel=True)
    chunked, chunked_state = qwen3_5.torch_chunk_gated_delta_rule(**args)
    recurrent, _ = qwen3_5.torch_recurrent_gated_delta_rule(**args)
    read, state = trace["hook_read"], trace["hook_state"]
    assert read.abs().max() > 1.0  # float32 rounding grows with the values: compared relative to them
    for theirs in (chunked, recurrent):
        assert (read - theirs).abs().max().item() <= 1e-5 * read.abs().max().item()
    # transformers keeps S as [d_key, d_value]; ours is the equation's [d_value, d_key]
    assert (state - chunked_state.transpose(-1, -2)).abs().max().item() <= 1e-5 * state.abs().max().item()


def test_the_cache_continues_the_recurrence() -> None:
    """Three tokens at a time through the cache (state and convolution inputs) give the whole pass's outputs."""
    net = layer(1)
    x = torch.randn(2, 20, CFG.d_model)
    with torch.inference_mode():
        whole = net(x)
        cache = LayerKV()
        parts = [net(x[:, i:i + 3], cache=cache) for i in range(0, 20, 3)]
    assert cache.seen == 20 and cache.length == 20 and cache.nbytes() == (2 * 4 * 12 * 8 + 2 * 3 * (2 * 16 + 48)) * 4
    assert (torch.cat(parts, dim=1) - whole).abs().max().item() < 1e-5


def test_with_autograd_on_the_layer_computes_the_same_and_has_gradients() -> None:
    """Under inference mode the state is updated in place; with autograd on, out of place: the same numbers."""
    net = layer(2)
    x = torch.randn(1, 12, CFG.d_model)
    with torch.inference_mode():
        fast = net(x)
    slow = net(x)
    slow.sum().backward()
    assert (fast - slow.detach()).abs().max().item() < 1e-6 and net.A_log.grad is not None


def test_the_read_out_and_the_change_equal_the_states_they_come_from() -> None:
    """recurrence() reads o_t and the change from vectors (o_t = c_t S_{t−1}q_t + w_t k_t·q_t, the norms' expansion):
    the same as S_t q_t and ‖S_t − S_{t−1}‖ / max(‖S_t‖, ‖S_{t−1}‖) computed on every state, from a state that is not
    zero (decoding from a cache)."""
    from model.deltanet import l2_normalize, recurrence

    torch.manual_seed(3)
    batch, n_pos, heads, d_key, d_value = 2, 9, 3, 8, 5
    q, k = l2_normalize(torch.randn(batch, n_pos, heads, d_key)), l2_normalize(torch.randn(batch, n_pos, heads, d_key))
    v, kept, beta = torch.randn(batch, n_pos, heads, d_value), torch.rand(batch, n_pos, heads), \
        torch.rand(batch, n_pos, heads)
    start = torch.randn(batch, heads, d_value, d_key)
    with torch.inference_mode():
        final, read, change = recurrence(start.clone(), q, k, v, kept, beta)
    state, reads, changes = start.clone(), [], []
    for t in range(n_pos):  # the equation as written, every state kept
        c, k_t = kept[:, t, :, None, None], k[:, t, :, None, :]
        new = c * state + beta[:, t, :, None, None] * (v[:, t, :, :, None] - c * state @ k_t.transpose(-1, -2)) * k_t
        reads.append((new @ q[:, t, :, :, None])[..., 0])
        sizes = torch.maximum(new.norm(dim=(-2, -1)), state.norm(dim=(-2, -1)))
        changes.append((new - state).norm(dim=(-2, -1)) / sizes)
        state = new
    assert (final - state).abs().max() < 1e-5
    assert (read - torch.stack(reads, dim=1)).abs().max() < 1e-5
    assert (change - torch.stack(changes, dim=1)).abs().max() < 1e-4 and float(change.min()) > 0.01
