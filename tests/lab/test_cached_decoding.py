"""lab/cached_decoding.py: greedy decoding with a KV cache, watched step by step: every step's cached logits equal a
full recomputation, the cache holds the bytes the formula says, and it computes fewer score cells than recomputing."""

from __future__ import annotations

import pytest
import torch

from lab.cached_decoding import cached_decoding
from model.config import TransformerConfig
from model.generate import generate
from model.transformer import Transformer

IDS = [5, 9, 2, 7, 7, 1]


def make(**changes: object) -> Transformer:
    base: dict[str, object] = dict(vocab_size=40, d_model=32, n_layers=2, n_heads=4, n_ctx=32, seed=4, init_std=0.3)
    return Transformer(TransformerConfig(**{**base, **changes})).eval()  # type: ignore[arg-type]


@pytest.mark.parametrize("changes", [{}, {"pos_encoding": "rope", "n_kv_heads": 2},
                                     {"architecture": "encoder-decoder"}], ids=["decoder", "rope-gqa", "enc-dec"])
def test_every_step_equals_recomputation_and_the_cache_matches_the_formula(changes: dict[str, object]) -> None:
    model = make(**changes)
    target = [1, 3] if model.cfg.architecture == "encoder-decoder" else None
    out = cached_decoding(model, "m", IDS, target, max_new_tokens=6)
    assert len(out.steps) == 6
    assert max(step["max_diff"] for step in out.steps) < 1e-5
    assert all(step["cache_bytes"] == step["formula_bytes"] for step in out.steps)
    prompt = len(target) if target is not None else len(IDS)
    assert [step["cache_positions"] for step in out.steps] == list(range(prompt, prompt + 6))
    assert [step["fed"] for step in out.steps] == [prompt] + [1] * 5
    last = out.steps[-1]
    assert last["cached_cells"] < last["recomputed_cells"]
    assert out.saved_fraction == pytest.approx(1 - last["cached_cells"] / last["recomputed_cells"])
    # the tokens are the greedy ones, with or without the cache
    again = generate(model, IDS, target_ids=target, max_new_tokens=6, temperature=0.0, use_cache=False)
    assert [step["id"] for step in out.steps] == again


def test_an_encoder_does_not_decode() -> None:
    with pytest.raises(ValueError):
        cached_decoding(make(architecture="encoder"), "m", IDS, None, max_new_tokens=2)


def test_the_bytes_per_value_follow_the_weights() -> None:
    model = make().to(torch.float64)
    out = cached_decoding(model, "m", IDS, None, max_new_tokens=1)
    assert out.bytes_per_value == 8


HYBRID: dict[str, object] = dict(pos_encoding="rope", norm="rmsnorm", activation="swiglu", bias=False, n_kv_heads=2,
                                 head_dim=16, rope_dims=4, qk_norm=True, attn_output_gate=True, n_layers=4,
                                 deltanet_layers=(0, 1, 3), deltanet_key_heads=2, deltanet_value_heads=4,
                                 deltanet_key_dim=8, deltanet_value_dim=12, deltanet_conv=3)


def test_a_hybrid_caches_the_deltanet_state_beside_k_and_v_and_counts_both_works() -> None:
    """A tiny Qwen3.5 (DeltaNet layers 0, 1, 3, attention layer 2): each cached step's logits equal the full pass's;
    the cache holds one attention layer's K and V per position plus three fixed states (state + convolution
    inputs); the attention scores grow with the position, the DeltaNet work per token does not."""
    model = make(**HYBRID)
    out = cached_decoding(model, "m", IDS, None, max_new_tokens=6)
    assert max(step["max_diff"] for step in out.steps) < 1e-4
    assert out.attention_layers == 1 and out.shape.layers == 1 and out.shape.deltanet_layers == 3
    state = 3 * (4 * 12 * 8 + 2 * (2 * 2 * 8 + 4 * 12)) * 4  # float32: S [4, 12, 8] and 2 conv inputs of 80 channels
    k_and_v = 2 * 1 * 2 * 16 * 4  # one attention layer, 2 K/V heads of 16, per position
    for step in out.steps:
        assert step["cache_bytes"] == step["formula_bytes"] == k_and_v * step["cache_positions"] + state
    per_token = 3 * 4 * 3 * 8 * 12  # 3 layers · 4 value heads · 3 passes over S [12, 8]
    assert out.state_cells_per_token == per_token
    prompt = len(IDS)
    states = [step["state_cells"] for step in out.steps]
    assert states == [per_token * (prompt + t) for t in range(6)]  # the prompt, then one token a step: fixed work
    assert out.steps[-1]["recomputed_state_cells"] == per_token * sum(range(prompt, prompt + 6))
    cells = [step["cached_cells"] for step in out.steps]
    rows = [cells[0]] + [b - a for a, b in zip(cells, cells[1:], strict=False)]
    assert rows == [prompt * prompt * 4] + [(prompt + t) * 4 for t in range(1, 6)]  # one attention layer, 4 heads
    again = generate(model, IDS, max_new_tokens=6, temperature=0.0, use_cache=False)
    assert [step["id"] for step in out.steps] == again


def test_the_score_cells_are_the_models_own_count_without_deltanet_layers() -> None:
    """Counted here per step from the cache's length, they equal the model's KVCache.score_cells."""
    from model.generate import Step

    model = make(pos_encoding="rope", n_kv_heads=2)
    counted: list[int] = []

    def keep(step: Step) -> None:
        assert step.cache is not None
        counted.append(step.cache.score_cells)

    out = cached_decoding(model, "m", IDS, None, max_new_tokens=5)
    generate(model, IDS, max_new_tokens=5, temperature=0.0, on_step=keep)
    assert [step["cached_cells"] for step in out.steps] == counted
    assert all("state_cells" not in step for step in out.steps) and out.state_cells_per_token == 0
