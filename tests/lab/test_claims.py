"""model/lab.py: the textbook's claims, checked as mathematics."""

from __future__ import annotations

import math

import pytest
import torch

from lab import masks as mask_lab
from lab import parameters, positions, sampling, scaling
from model.config import TransformerConfig
from model.edits import Interventions
from model.positional import rope_angles
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


def test_rope_scores_depend_only_on_the_offset() -> None:
    out = positions.rope_relative_scores(length=128, d_head=64, base=10000.0, seed=0)
    assert out["max_spread"] < 1e-5
    assert max(out["by_offset"]) - min(out["by_offset"]) > 0.5  # yet different offsets differ
    assert out["scores"][0, 0] == pytest.approx(out["plain"], abs=1e-9)  # offset 0: no rotation at all
    wide = rope_angles(64, 16, 10000.0, torch.float64).float()
    torch.testing.assert_close(wide, rope_angles(64, 16), rtol=1e-5, atol=1e-4)


def test_rope_pair_turns_on_a_unit_circle() -> None:
    pts = positions.rope_pair(32, 16, 10000.0, pair=0)["points"]
    torch.testing.assert_close(pts.norm(dim=-1), torch.ones(32))
    assert float(pts[1, 1]) == pytest.approx(math.sin(1.0), abs=1e-6)  # pair 0 turns 1 radian per position


def test_sinusoidal_similarity_falls_with_distance() -> None:
    out = positions.sinusoidal_similarity(64, 64)
    near = out["by_distance"]
    assert near[0] == pytest.approx(32.0)  # PE·PE = Σ sin² + cos² = d_model / 2
    assert near[0] > near[1] > near[2] > near[4] > near[8]


def test_masks_are_the_models_own() -> None:
    masks = mask_lab.mask_set(n=6, shorter=3, n_target=4, window=2, causal=True)
    assert torch.equal(masks["causal"], torch.ones(6, 6).tril().bool())
    assert masks["bidirectional"].all()
    assert masks["sliding"].sum(-1).tolist() == [1, 2, 2, 2, 2, 2]
    assert not masks["padding"][1, :, 3:].any() and masks["padding"][0].equal(masks["causal"])
    assert masks["cross"].shape == (2, 4, 6) and masks["cross"][0].all() and not masks["cross"][1, :, 3:].any()
    model = make()
    _, trace = model.run_with_trace(IDS)
    n = IDS.shape[1]
    causal = mask_lab.mask_set(n, 2, n, 3, True)
    own = mask_lab.patterns_under_mask(model, IDS, causal["causal"], None, 1)
    torch.testing.assert_close(own, trace["blocks.1.attn.hook_pattern"])  # the causal mask is the model's
    _, peeking = model.run_with_trace(IDS, edits=Interventions(no_mask=True))
    torch.testing.assert_close(mask_lab.patterns_under_mask(model, IDS, causal["bidirectional"], None, 1),
                               peeking["blocks.1.attn.hook_pattern"])


def test_padding_changes_nothing_before_it_in_a_decoder_and_hides_the_pad_keys() -> None:
    model = make()
    trace = mask_lab.padded_run(model, IDS, 4, ["blocks.1.attn.hook_pattern"])
    pattern = trace["blocks.1.attn.hook_pattern"]  # [2, head, q, k]
    torch.testing.assert_close(pattern[1, :, :4, :4], pattern[0, :, :4, :4])
    assert float(pattern[1, :, :, 4:].abs().max()) == 0.0


def test_parameters_equal_the_state_dict_and_heads_cost_nothing_extra() -> None:
    for model in (make(), make(architecture="encoder-decoder", pos_encoding="learned"), make(n_kv_heads=2)):
        report = parameters.parameter_report(model)
        assert report["counts"]["total"] == report["state_dict_total"]
        seen: set[int] = set()
        independent = sum(t.numel() for t in model.state_dict().values()
                          if t.data_ptr() not in seen and not seen.add(t.data_ptr()))  # type: ignore[func-returns-value]
        assert report["state_dict_total"] == independent
    cfg = TransformerConfig(d_model=512, n_heads=8)
    one, eight = parameters.attention_counts(cfg, 1), parameters.attention_counts(cfg, 8)
    assert one == eight and one["total"] == 4 * (512 * 512 + 512)
    assert len({row["total"] for row in parameters.head_splits(cfg)}) == 1
    kv = {row["kind"] + str(row["n_kv_heads"]): row["kv"] for row in parameters.kv_sharing(cfg)}
    assert kv["MHA8"] == 2 * (512 * 512 + 512) and kv["MQA1"] == 2 * (512 * 64 + 64)
    assert kv["GQA2"] == 2 * (512 * 128 + 128)


def test_sampling_steps() -> None:
    logits = torch.randn(100, generator=torch.Generator().manual_seed(0)) * 3
    plain = sampling.sampling_distributions(logits, 1.0, None, None)
    torch.testing.assert_close(plain["final"], torch.softmax(logits.double(), -1))
    hot = sampling.sampling_distributions(logits, 2.0, None, None)
    cold = sampling.sampling_distributions(logits, 0.5, None, None)
    assert sampling.entropy(cold["final"]) < sampling.entropy(plain["final"]) < sampling.entropy(hot["final"])
    out = sampling.sampling_distributions(logits, 1.0, 10, 0.6)
    assert int((out["top_k"] > 0).sum()) == 10 and float(out["top_k"].sum()) == pytest.approx(1.0)
    kept = out["final"] > 0
    mass = float(out["top_k"][kept].sum())
    smallest = float(out["top_k"][kept].min())
    assert mass >= 0.6 and mass - smallest < 0.6  # the smallest set that reaches p
    assert float(out["final"].sum()) == pytest.approx(1.0)


def test_seeded_draws_repeat() -> None:
    probs = torch.softmax(torch.randn(50, generator=torch.Generator().manual_seed(1)), -1)
    assert sampling.seeded_draws(probs, 30, 7) == sampling.seeded_draws(probs, 30, 7)
    assert sampling.seeded_draws(probs, 30, 7) != sampling.seeded_draws(probs, 30, 8)
