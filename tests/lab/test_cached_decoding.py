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
