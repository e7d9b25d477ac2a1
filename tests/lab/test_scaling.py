"""lab/scaling.py: Var(q·k) ≈ d_k for random unit-variance vectors, an unscaled softmax saturates, and the head
statistics are the model's own scores with the layer's own divisor."""

from __future__ import annotations

import math

import pytest
import torch

from lab import scaling
from model.config import TransformerConfig
from model.edits import Interventions
from model.transformer import Transformer

IDS = torch.tensor([[5, 9, 2, 7, 7, 1, 3, 8]])  # [batch, pos]


def make(**changes: object) -> Transformer:
    base: dict[str, object] = dict(architecture="decoder", vocab_size=16, d_model=32, n_layers=2, n_heads=4, n_ctx=16,
                                   pos_encoding="rope", seed=3, init_std=0.3)
    return Transformer(TransformerConfig(**{**base, **changes})).eval()  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_unscaled_dot_products_have_variance_d_k(seed: int) -> None:
    out = scaling.qk_variance([64, 512], samples=4096, seed=seed)
    for d_k, variance, scaled in zip([64, 512], out["variance"], out["scaled_variance"], strict=True):
        assert abs(variance - d_k) / d_k < 0.10, (d_k, variance)
        assert abs(scaled - 1) < 0.10, (d_k, scaled)


def test_without_the_scale_the_softmax_saturates_as_d_k_grows() -> None:
    out = scaling.softmax_sharpness([4, 64, 1024], n_keys=32, rows=256, seed=0)
    assert out["max_unscaled"][0] < out["max_unscaled"][1] < out["max_unscaled"][2]
    assert out["max_unscaled"][2] > 0.9 and out["entropy_unscaled"][2] < 0.3  # nearly one-hot
    assert max(out["max_scaled"]) < 0.3  # scaled rows stay spread at every width
    assert min(out["entropy_scaled"]) > 0.8 * math.log(32)


def test_head_statistics_match_the_model_scores() -> None:
    model = make(pos_encoding="sinusoidal")
    _, trace = model.run_with_trace(IDS)
    raw, scores = trace["blocks.0.attn.hook_scores_raw"][0], trace["blocks.0.attn.hook_attn_scores"][0]
    stats = scaling.head_statistics(raw, scores, model.cfg.score_divisor(0))
    pattern = trace["blocks.0.attn.hook_pattern"][0]  # [head, q, k]
    assert stats["max_scaled"] == pytest.approx(pattern.amax(-1).mean(-1).tolist(), abs=1e-6)
    for var_raw, var_scaled in zip(stats["var_raw"], stats["var_scaled"], strict=True):
        assert var_raw == pytest.approx(var_scaled * model.cfg.d_head, rel=1e-9)
    _, unscaled = model.run_with_trace(IDS, edits=Interventions(no_scale=True))  # layer 0: same inputs
    expected = unscaled["blocks.0.attn.hook_pattern"][0].amax(-1).mean(-1).tolist()
    assert stats["max_unscaled"] == pytest.approx(expected, abs=1e-5)


def test_head_statistics_use_the_layers_own_divisor() -> None:
    # GPT-2's scale_attn_by_inverse_layer_idx: layer 1 divides by √d_head × 2, and the lab says so
    model = make(pos_encoding="sinusoidal", scale_attn_by_layer=True)
    _, trace = model.run_with_trace(IDS)
    raw, scores = trace["blocks.1.attn.hook_scores_raw"][0], trace["blocks.1.attn.hook_attn_scores"][0]
    divisor = model.cfg.score_divisor(1)
    assert divisor == pytest.approx(2 * math.sqrt(model.cfg.d_head))
    stats = scaling.head_statistics(raw, scores, divisor)
    for var_raw, var_scaled in zip(stats["var_raw"], stats["var_scaled"], strict=True):
        assert var_raw == pytest.approx(var_scaled * divisor**2, rel=1e-9)
    causal = torch.ones(raw.shape[-1], raw.shape[-1]).tril().bool()
    unscaled = torch.softmax(raw.double().masked_fill(~causal, float("-inf")), -1)  # softmax(Q·Kᵀ + mask)
    assert stats["max_unscaled"] == pytest.approx(unscaled.amax(-1).mean(-1).tolist(), abs=1e-6)


def test_softmax_jacobian_by_autograd_is_diag_p_minus_p_p_transposed_on_the_model_scores() -> None:
    model = make(pos_encoding="sinusoidal")
    _, trace = model.run_with_trace(IDS)
    scores = trace["blocks.1.attn.hook_attn_scores"][0]  # [head, q, k], -inf above the diagonal
    pattern = trace["blocks.1.attn.hook_pattern"][0].double()
    for head in range(scores.shape[0]):
        jacobian = scaling.softmax_jacobian(scores[head])  # [q, k, k]
        assert torch.allclose(jacobian, scaling.jacobian_closed_form(pattern[head]), atol=1e-6)
        hidden = ~torch.isfinite(scores[head])  # a hidden key passes no gradient
        assert jacobian.transpose(-1, -2)[hidden].abs().max() == 0
    norms = scaling.jacobian_norms(scores)
    closed = scaling.jacobian_closed_form(pattern).flatten(-2).norm(dim=-1)
    assert torch.allclose(norms, closed, atol=1e-6)
    assert norms[:, 0].abs().max() == 0  # the first query sees one key: weight 1, no gradient


def test_the_gradient_through_softmax_vanishes_as_rows_saturate() -> None:
    even = scaling.jacobian_norms(torch.zeros(1, 1, 32, dtype=torch.float64))
    assert float(even) == pytest.approx(math.sqrt(31) / 32)  # √(n − 1)/n for an even row
    generator = torch.Generator().manual_seed(0)
    q, k = torch.randn(64, 512, generator=generator), torch.randn(32, 512, generator=generator)
    raw = (q @ k.T)[None]  # [1, row, key], Var ≈ 512
    scaled, unscaled = scaling.jacobian_norms(raw / math.sqrt(512)), scaling.jacobian_norms(raw)
    # most unscaled rows are nearly one-hot: their gradient all but vanishes (the few split rows keep some)
    assert float(unscaled.median()) < 0.01 * float(scaled.median())
    assert float(unscaled.mean()) < 0.4 * float(scaled.mean())
    stats = scaling.head_statistics(raw, raw / math.sqrt(512), math.sqrt(512))
    assert stats["jacobian_unscaled"][0] == pytest.approx(float(unscaled.mean()), rel=1e-6)
    assert stats["jacobian_scaled"][0] == pytest.approx(float(scaled.mean()), rel=1e-6)
