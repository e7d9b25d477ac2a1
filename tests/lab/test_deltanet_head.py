"""lab/deltanet_head.py: one real gated DeltaNet head of the shipped tiny-deltanet, read off its own forward pass."""

from __future__ import annotations

import pytest
import torch

from checkpoints import load_checkpoint
from lab.deltanet_head import WEIGHTS, NotDeltaNet, deltanet_head, shipped_hybrid, text_tokens
from model.config import TransformerConfig
from model.transformer import Transformer

TEXT = "The animal didn't cross the street because it was too tired"


def test_the_state_is_the_traced_one_and_keeps_its_size() -> None:
    loaded = shipped_hybrid()
    ids = [t.id for t in text_tokens(loaded, TEXT)]
    assert ids[0] == loaded.tokenizer.token_id("<|endoftext|>")  # the start token it was trained with
    real = deltanet_head(loaded.model, ids, layer=2, head=1)
    cfg = loaded.model.cfg
    assert (real.d_value, real.d_key, real.key_head) == (cfg.deltanet_value_dim, cfg.deltanet_key_dim, 0)
    _, trace = loaded.model.run_with_trace(torch.tensor([ids]))
    assert torch.equal(real.state, trace["blocks.2.deltanet.hook_state"][0, 1].float())
    assert torch.equal(real.change, trace["blocks.2.deltanet.hook_state_change"][0, :, 1].float())
    # the half's state is the state at the half's last token: another forward pass, the same shape, other numbers
    _, half = loaded.model.run_with_trace(torch.tensor([ids[:real.half_tokens]]))
    assert real.half_tokens == len(ids) // 2 and real.half_state_shape == tuple(real.state.shape)
    assert not torch.allclose(half["blocks.2.deltanet.hook_state"][0, 1].float(), real.state)
    # the first token writes S from nothing; kept = exp(g) in (0, 1); β in (0, 1)
    assert real.change[0] == pytest.approx(1.0) and 0 < real.last_change <= 2
    assert bool(((real.kept > 0) & (real.kept < 1)).all()) and bool(((real.beta > 0) & (real.beta < 1)).all())
    # the attention layer (3): K and V of 2 K/V heads × 32 per token; the layer's state: 4 heads × 32 × 32
    assert (real.attention_layer, real.kv_per_token, real.kv_numbers) == (3, 128, 128 * len(ids))
    assert real.layer_state_numbers == 4096 and real.crossover == 33  # 33 · 128 > 4096 ≥ 32 · 128


def test_what_is_no_deltanet_head_is_refused_by_name() -> None:
    model = shipped_hybrid().model
    with pytest.raises(NotDeltaNet, match=r"layer 3 is not a gated DeltaNet layer .*layers 0, 1, 2"):
        deltanet_head(model, [1, 2, 3], layer=3, head=0)
    with pytest.raises(NotDeltaNet, match=r"head 4 .* value heads 0 to 3"):
        deltanet_head(model, [1, 2, 3], layer=0, head=4)
    tiny_gpt = load_checkpoint(WEIGHTS / "tiny-gpt").model
    with pytest.raises(NotDeltaNet, match="no gated DeltaNet layer"):
        deltanet_head(tiny_gpt, [1, 2, 3], layer=0, head=0)


def test_a_hybrid_without_attention_has_no_cache_to_compare() -> None:
    cfg = TransformerConfig(vocab_size=50, d_model=32, n_layers=2, n_heads=2, d_mlp=64, n_ctx=32, norm="rmsnorm",
                            activation="swiglu", bias=False, pos_encoding="rope", qk_norm=True,
                            deltanet_layers=(0, 1), deltanet_key_heads=1, deltanet_value_heads=2,
                            deltanet_key_dim=8, deltanet_value_dim=8, deltanet_conv=4, attn_output_gate=True)
    real = deltanet_head(Transformer(cfg).eval(), [1, 2, 3, 4], layer=1, head=1)
    assert (real.attention_layer, real.kv_per_token, real.crossover) == (None, 0, None)
    assert real.state.shape == (8, 8) and real.half_state_shape == (8, 8)
