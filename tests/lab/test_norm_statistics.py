"""lab/norm_statistics.py: LayerNorm and RMSNorm read one token, BatchNorm the whole batch; the statistics are the
model's own, pads are counted by nothing, and swapping sentence 2 moves only BatchNorm's output for sentence 1."""

from __future__ import annotations

import pytest
import torch

from lab import norm_statistics as norms
from model.config import TransformerConfig
from model.transformer import Transformer

FIRST, SECOND, OTHER = [1, 2, 3, 4, 5], [6, 7, 8], [9, 9, 9, 9, 9, 9, 9]  # OTHER is longer: FIRST gets padded

MODELS = {
    "pre-layernorm decoder": dict(architecture="decoder", norm="layernorm"),
    "post-layernorm encoder": dict(architecture="encoder", norm="layernorm", norm_placement="post", lm_head=False),
    "rmsnorm decoder": dict(architecture="decoder", norm="rmsnorm", pos_encoding="rope", n_kv_heads=2),
}


def make(**changes: object) -> Transformer:
    cfg = TransformerConfig(vocab_size=20, d_model=32, n_layers=2, n_heads=4, n_ctx=16, seed=1, **changes)  # type: ignore[arg-type]
    return Transformer(cfg).eval()


def test_padded_batch_marks_the_pad_positions() -> None:
    batch = norms.padded_batch([FIRST, SECOND])
    assert batch.tokens.tolist() == [FIRST, SECOND + [norms.PAD_ID] * 2]
    assert batch.real.tolist() == [[True] * 5, [True] * 3 + [False] * 2]


@pytest.mark.parametrize("name", MODELS)
def test_the_statistics_are_the_models_own_and_a_sentence_in_the_batch_is_the_sentence_alone(name: str) -> None:
    model = make(**MODELS[name])
    batch = norms.padded_batch([FIRST, SECOND])
    read = norms.norm_input(model, batch, 1)
    stats = norms.statistics(read.x, batch.real, model.cfg.norm_eps)
    ours = stats.ln_sigma if model.cfg.norm == "layernorm" else stats.rms
    assert torch.allclose(read.model_scale[batch.real], ours[batch.real], atol=1e-5)
    for row, ids in enumerate([FIRST, SECOND]):  # the padding is honest: the batch changes no real token
        alone = norms.norm_input(model, norms.padded_batch([ids]), 1).x[0]
        assert torch.allclose(read.x[row, : len(ids)], alone, atol=1e-5)


def test_batch_norm_counts_the_real_tokens_only() -> None:
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    real = norms.padded_batch([FIRST, SECOND]).real
    x[1, 3:] = 1e6  # pad rows: whatever they hold must not count
    stats = norms.statistics(x, real, 1e-5)
    tokens = torch.cat([x[0], x[1, :3]])  # [8 real tokens, d_model]
    assert torch.allclose(stats.bn_mean, tokens.mean(0))
    assert torch.allclose(stats.bn_sigma, (tokens.var(0, unbiased=False) + 1e-5).sqrt())
    zeros, ones = torch.zeros(8, dtype=torch.float64), torch.ones(5, dtype=torch.float64)
    assert torch.allclose(stats.layer_norm[0].mean(-1), zeros[:5], atol=1e-12)  # per token: mean 0, σ ≈ 1
    assert torch.allclose(stats.layer_norm[0].pow(2).mean(-1), ones, atol=1e-3)
    assert torch.allclose(stats.batch_norm[real].mean(0), zeros, atol=1e-12)  # per feature over the batch
    assert torch.allclose(stats.rms_norm[0].pow(2).mean(-1), ones, atol=1e-3)


@pytest.mark.parametrize("name", MODELS)
def test_swapping_sentence_2_moves_batch_norm_only(name: str) -> None:
    model = make(**MODELS[name])
    before, after = norms.padded_batch([FIRST, SECOND]), norms.padded_batch([FIRST, OTHER])
    stats = norms.statistics(norms.norm_input(model, before, 1).x, before.real, model.cfg.norm_eps)
    swapped = norms.statistics(norms.norm_input(model, after, 1).x, after.real, model.cfg.norm_eps)
    change = norms.swap_change(stats, swapped, len(FIRST))
    assert change.layer_norm.max() < 1e-5 and change.rms_norm.max() < 1e-5
    assert change.batch_norm.min() > 1e-2  # every token of sentence 1 moved
