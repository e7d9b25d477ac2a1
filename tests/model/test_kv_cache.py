"""KV cache: cached decoding equals full recomputation at every step, and it holds the bytes and does the work
lab/kv_cache_size.py's formulas say (the formulas themselves: tests/lab/test_kv_cache_size.py)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from lab.kv_cache_size import (
    cache_bytes,
    cached_score_cells,
    recomputed_score_cells,
    shape_of,
)
from model import Transformer, TransformerConfig
from model.generate import generate, generate_greedy_batch
from model.kv_cache import KVCache

TOL = 1e-5

# ---------------------------------------------------------------- cached decoding = recomputation

CONFIGS: dict[str, dict[str, Any]] = {
    "sinusoidal": {},
    "learned-post-ln": {"pos_encoding": "learned", "norm_placement": "post"},
    "rope-gqa-swiglu": {"pos_encoding": "rope", "n_kv_heads": 2, "activation": "swiglu", "norm": "rmsnorm"},
    "alibi-mqa": {"pos_encoding": "alibi", "n_kv_heads": 1},
    "alibi-3-heads": {"pos_encoding": "alibi", "n_heads": 3, "d_model": 48},
    "none-window": {"pos_encoding": "none", "sliding_window": 3},
    "rope-window": {"pos_encoding": "rope", "sliding_window": 4},
    "encoder-decoder": {"architecture": "encoder-decoder", "pos_encoding": "sinusoidal"},
    "encoder-decoder-rope-post": {"architecture": "encoder-decoder", "pos_encoding": "rope", "norm_placement": "post"},
}


def make(**overrides: Any) -> Transformer:
    base: dict[str, Any] = {"vocab_size": 50, "d_model": 32, "n_layers": 2, "n_heads": 4, "n_ctx": 40, "seed": 3}
    return Transformer(TransformerConfig(**(base | overrides))).eval()


@pytest.mark.parametrize("name", list(CONFIGS))
def test_cached_logits_equal_recomputation_at_every_step(name: str) -> None:
    model = make(**CONFIGS[name])
    enc_dec = model.cfg.architecture == "encoder-decoder"
    gen = torch.Generator().manual_seed(0)
    source = torch.randint(0, 50, (2, 7), generator=gen)  # [batch, pos]
    sequence = torch.randint(0, 50, (2, 16), generator=gen)  # [batch, pos]: what gets decoded
    prompt = 5
    cache = KVCache()
    with torch.no_grad():
        full = model(source, target_tokens=sequence) if enc_dec else model(sequence)  # [batch, pos, d_vocab]
        chunks = [(0, prompt)] + [(t, t + 1) for t in range(prompt, sequence.shape[1])]
        for begin, end in chunks:
            new = sequence[:, begin:end]
            step = model(source, target_tokens=new, cache=cache) if enc_dec else model(new, cache=cache)
            torch.testing.assert_close(step, full[:, begin:end], atol=TOL, rtol=0)
            # every step against its own recomputation of the prefix, not just the final pass
            prefix = sequence[:, :end]
            again = model(source, target_tokens=prefix) if enc_dec else model(prefix)
            torch.testing.assert_close(step[:, -1], again[:, -1], atol=TOL, rtol=0)
    assert cache.length == sequence.shape[1]


def test_cache_bytes_match_the_closed_form_for_the_model() -> None:
    model = make(pos_encoding="rope", n_kv_heads=2)
    cache = KVCache()
    with torch.no_grad():
        model(torch.arange(11)[None], cache=cache)
    expected = cache_bytes(shape_of("m", model.cfg), context=11, batch=1, dtype="float32")
    assert cache.nbytes() == expected == 2 * 2 * 2 * 8 * 4 * 11


def test_encoder_runs_once_and_cross_keys_are_stored_once() -> None:
    model = make(architecture="encoder-decoder")
    cache = KVCache()
    source = torch.arange(6)[None]
    with torch.no_grad():
        model(source, target_tokens=torch.tensor([[1]]), cache=cache)
        memory, cross = cache.memory, cache.cross_attn[0].k
        model(source, target_tokens=torch.tensor([[2]]), cache=cache)
    assert cache.memory is memory and cache.cross_attn[0].k is cross
    assert cache.cross_attn[0].length == 6 and cache.length == 2


def test_work_saved_is_recorded() -> None:
    model = make()
    prompt, new = 6, 10
    cache = KVCache()
    ids = list(range(prompt))
    with torch.no_grad():
        model(torch.tensor([ids]), cache=cache)
        for t in range(new - 1):
            model(torch.tensor([[t]]), cache=cache)
    cfg = model.cfg
    assert cache.score_cells == cached_score_cells(cfg, prompt, new)
    recomputed = recomputed_score_cells(cfg, prompt, new)
    assert recomputed == sum(n * n for n in range(prompt, prompt + new)) * cfg.n_heads * cfg.n_layers
    assert recomputed > 5 * cache.score_cells / 2


def test_cache_refuses_bidirectional_stacks_and_the_context_limit() -> None:
    with pytest.raises(ValueError):
        make(architecture="encoder")(torch.arange(4)[None], cache=KVCache())
    model = make(pos_encoding="rope")
    cache = KVCache()
    with torch.no_grad():
        model(torch.zeros(1, 40, dtype=torch.long), cache=cache)
        with pytest.raises(ValueError):
            model(torch.zeros(1, 1, dtype=torch.long), cache=cache)


def test_traced_steps_keep_the_trace_names() -> None:
    model = make(pos_encoding="rope")
    cache = KVCache()
    model(torch.arange(4)[None], cache=cache)
    _, trace = model.run_with_trace(torch.tensor([[7]]), cache=cache)  # type: ignore[arg-type]
    assert set(trace) <= set(model.trace_names)
    assert trace["blocks.0.attn.hook_pattern"].shape == (1, 4, 1, 5)  # [batch, head, q_pos, k_pos]


# ---------------------------------------------------------------- generate


@pytest.mark.parametrize("name", ["sinusoidal", "rope-gqa-swiglu", "alibi-mqa", "none-window"])
def test_generate_with_and_without_cache_agree(name: str) -> None:
    model = make(**CONFIGS[name])
    for temperature in (0.0, 1.0):
        kwargs: dict[str, Any] = {"max_new_tokens": 20, "temperature": temperature, "top_k": 10, "seed": 4}
        assert generate(model, [1, 2, 3], **kwargs) == generate(model, [1, 2, 3], use_cache=False, **kwargs)


def test_encoder_decoder_generation_with_and_without_cache_agree() -> None:
    model = make(architecture="encoder-decoder")
    cached = generate(model, [3, 4, 5], target_ids=[1], max_new_tokens=12, temperature=0.0)
    assert cached == generate(model, [3, 4, 5], target_ids=[1], max_new_tokens=12, temperature=0.0, use_cache=False)
    sources = [[3, 4, 5, 6], [7, 8], [9]]
    kwargs: dict[str, Any] = {"start_id": 1, "stop_id": 2, "pad_id": 0, "max_new_tokens": 10}
    assert generate_greedy_batch(model, sources, **kwargs) == generate_greedy_batch(
        model, sources, use_cache=False, **kwargs
    )


def test_shipped_models_decode_the_same_with_the_cache(tiny_gpt: Any, translator: Any) -> None:
    gpt = tiny_gpt.model
    ids = [1, 50, 60, 70]
    assert generate(gpt, ids, max_new_tokens=24, temperature=0.0) == generate(
        gpt, ids, max_new_tokens=24, temperature=0.0, use_cache=False
    )
    tr = translator.model
    assert generate(tr, [5, 6, 7, 8], target_ids=[1], max_new_tokens=10, temperature=0.0) == generate(
        tr, [5, 6, 7, 8], target_ids=[1], max_new_tokens=10, temperature=0.0, use_cache=False
    )
