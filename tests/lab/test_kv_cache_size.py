"""lab/kv_cache_size.py: KV-cache bytes per token and in total follow the closed form
2 · layers · kv_heads · d_head · bytes · min(context, n_ctx, window) · batch, for published shapes and any config."""

from __future__ import annotations

import pytest

from lab.kv_cache_size import (
    PUBLISHED,
    CacheShape,
    bytes_per_token,
    cache_bytes,
    kv_cache_table,
    shape_of,
    variants,
)
from model import TransformerConfig


def closed_form(s: CacheShape, context: int, batch: int, nbytes: int) -> int:
    positions = min(context, s.context, s.sliding_window or s.context)  # a model never holds more than its context
    return 2 * s.layers * s.kv_heads * s.d_head * nbytes * positions * batch


@pytest.mark.parametrize("shape", PUBLISHED, ids=lambda s: s.name)
@pytest.mark.parametrize(("dtype", "nbytes"), [("float16", 2), ("float32", 4), ("int8", 1)])
def test_bytes_equal_the_closed_form(shape: CacheShape, dtype: str, nbytes: int) -> None:
    for context, batch in [(1, 1), (2048, 1), (4096, 8), (32768, 3)]:
        expected = closed_form(shape, context, batch, nbytes)
        assert cache_bytes(shape, context=context, batch=batch, dtype=dtype) == expected
    for row in kv_cache_table([shape], batch=5, dtype=dtype):  # no context asked: the model's own
        assert row["cached_positions"] == min(shape.context, shape.sliding_window or shape.context)
        assert row["total_bytes"] == closed_form(shape, shape.context, 5, nbytes)


def test_published_models_include_gpt2_small_and_a_gqa_model_of_each_family() -> None:
    by_name = {s.name: s for s in PUBLISHED}
    assert by_name["GPT-2 small"].attention == "MHA" and bytes_per_token(by_name["GPT-2 small"]) == 2 * 12 * 12 * 64 * 2
    for name in ("Llama-3-8B", "Mistral-7B", "Qwen2.5-0.5B", "Qwen2.5-7B", "SmolLM2-135M"):
        assert by_name[name].attention == "GQA", name


def test_published_numbers() -> None:
    by_name = {s.name: s for s in PUBLISHED}
    # GPT-3: 2·96·96·128·2 bytes = 4.5 MiB per token in fp16; Llama-2-7B: 0.5 MiB
    assert bytes_per_token(by_name["GPT-3 175B"]) == 4_718_592
    assert bytes_per_token(by_name["Llama-2-7B"]) == 524_288
    assert bytes_per_token(by_name["Llama-2-70B"]) == 2 * 80 * 8 * 128 * 2
    assert by_name["Llama-3-8B"].attention == "GQA" and by_name["GPT-3 175B"].attention == "MHA"


def test_gqa_with_8_of_32_heads_is_a_quarter_of_mha() -> None:
    llama3 = next(s for s in PUBLISHED if s.name == "Llama-3-8B")
    mha = variants(llama3)["MHA"]
    assert (mha.kv_heads, variants(llama3)["GQA"].kv_heads, variants(llama3)["MQA"].kv_heads) == (32, 8, 1)
    for context in (1, 4096, 8192):
        assert 4 * cache_bytes(llama3, context=context) == cache_bytes(mha, context=context)
        assert 32 * cache_bytes(variants(llama3)["MQA"], context=context) == cache_bytes(mha, context=context)


def test_mistral_sliding_window_caps_the_cache() -> None:
    mistral = next(s for s in PUBLISHED if s.name == "Mistral-7B")
    per_token = bytes_per_token(mistral)
    assert cache_bytes(mistral, context=1000) == 1000 * per_token
    assert cache_bytes(mistral, context=4096) == cache_bytes(mistral, context=32768) == 4096 * per_token


def test_any_config_under_mha_gqa_mqa() -> None:
    cfg = TransformerConfig(d_model=128, n_heads=8, n_kv_heads=4, n_layers=3)
    shape = shape_of("tiny", cfg)
    assert (shape.layers, shape.q_heads, shape.kv_heads, shape.d_head) == (3, 8, 4, 16)
    rows = kv_cache_table(list(variants(shape).values()), context=100, batch=2, dtype="float32")
    assert [r["kv_heads"] for r in rows] == [8, 4, 1]  # GQA: the largest proper divisor when 8 is not fewer
    assert [r["total_bytes"] for r in rows] == [2 * 3 * kv * 16 * 4 * 100 * 2 for kv in (8, 4, 1)]
    assert variants(CacheShape("x", 1, 12, 12, 64, 512))["GQA"].kv_heads == 6
    assert "GQA" not in variants(CacheShape("x", 1, 2, 2, 64, 512))
    gqa = shape_of("gqa", TransformerConfig(d_model=96, n_heads=6, n_kv_heads=2, n_ctx=128))
    assert variants(gqa)["GQA"].kv_heads == 2  # a GQA model is shown with its own K/V heads, not a divisor
    assert kv_cache_table([gqa], context=4096)[0]["cached_positions"] == 128  # never past its context
    with pytest.raises(ValueError):
        cache_bytes(shape, context=10, dtype="float64")


def test_encoder_decoder_counts_its_decoder_layers() -> None:
    cfg = TransformerConfig(architecture="encoder-decoder", n_layers=4, n_decoder_layers=2, d_model=32)
    assert shape_of("t", cfg).layers == 2


def test_local_layers_keep_their_window_and_global_layers_every_position() -> None:
    """Gemma 3's mix (tests/lab/new_family_models.py): layer 0 keeps a window of 3 keys, layer 1 every one."""
    from lab import kv_cache_size
    from tests.lab.new_family_models import new_family_model

    cfg = new_family_model("gemma3").cfg
    shape = kv_cache_size.shape_of("gemma3", cfg)
    assert (shape.layers, shape.local_layers, shape.sliding_window, shape.d_head) == (2, 1, 3, 16)
    per_layer_token = 2 * cfg.kv_heads * 16 * 2  # K and V · kv heads · d_head · float16
    assert kv_cache_size.cache_bytes(shape, context=10) == per_layer_token * (10 + 3)
    assert kv_cache_size.cache_bytes(shape, context=2) == per_layer_token * (2 + 2)  # under the window: all kept
    (row,) = kv_cache_size.kv_cache_table([shape], context=10)
    assert (row["cached_positions"], row["local_layers"], row["local_positions"]) == (10, 1, 3)
    # a window on every layer still caps the whole cache, and its row has no local fields
    every = kv_cache_size.shape_of("all-local", cfg.replace(window_layers=None, rope_base_local=None))
    assert every.local_layers is None and kv_cache_size.cached_positions(every, 10) == 3
    assert "local_layers" not in kv_cache_size.kv_cache_table([every], context=10)[0]
