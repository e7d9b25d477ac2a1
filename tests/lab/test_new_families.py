"""The experiments and analyses that redo part of the forward pass, on tiny models with Gemma 2's, Gemma 3's and
Phi-3's fields (tests/lab/new_family_models.py): each recomputed number equals the model's own stage, or what
cannot be split is refused by name."""

from __future__ import annotations

import pytest
import torch

from analysis.lens import logit_lens
from lab import quantization as quant
from lab.attention_flow import attention_flow
from lab.flash import differences, flash_for_head
from lab.linear_attention import linear_attention_for_head
from lab.logit_attribution import NotAdditive, logit_attribution
from lab.masks import patterns_under_mask
from lessons.trace_claims import heads_split, rope_turns, unscaled_peakier
from lessons.view import View
from lessons.wording import line, ui_words
from model.edits import Interventions
from model.hooks import stage_name
from model.tokenizer import Token
from tests.lab.new_family_models import new_family_model

FAMILIES = ["gemma2", "gemma3", "phi3"]
TOKENS = torch.arange(3, 13)[None]  # [1, 10]: longer than the window (3) and than phi3's original context (6)


def traced(name: str, **changes: object) -> tuple[torch.nn.Module, torch.Tensor, dict[str, torch.Tensor]]:
    model = new_family_model(name, **changes)
    logits, trace = model.run_with_trace(TOKENS)
    return model, logits, dict(trace.items()) if hasattr(trace, "items") else trace


def test_the_soft_caps_bite() -> None:  # else the checks below could not fail for want of a cap
    _, _, trace = traced("gemma2")
    assert float((trace[stage_name("scores_capped", 1)] - trace[stage_name("scores_scaled", 1)]).abs().max()) > 1
    assert float((trace["hook_logits"] - trace["hook_logits_raw"]).abs().max()) > 1


@pytest.mark.parametrize("name", FAMILIES)
def test_flash_and_linear_attention_recompute_the_models_head(name: str) -> None:
    model, _, trace = traced(name)
    for layer in range(2):  # layer 0 is local (window 3, Gemma 3's own RoPE base), layer 1 global
        for head in (0, 3):
            result, inputs = flash_for_head(model, TOKENS, layer, head, block_q=3, block_k=2)
            to_z, to_naive = differences(result, inputs)
            assert to_z < 1e-5 and to_naive < 1e-5, (layer, head, to_z, to_naive)
            linear = linear_attention_for_head(model, trace, layer, head)
            assert linear.max_diff_pattern < 1e-5 and linear.max_diff_z < 1e-5
    assert inputs.softcap == (2.0 if name == "gemma2" else None)


@pytest.mark.parametrize("name", FAMILIES)
def test_attention_flow_adds_up_to_the_layers_output(name: str) -> None:
    model, _, trace = traced(name)
    for layer in range(2):
        flow = attention_flow(model, trace, layer=layer, head=1)
        assert flow.identity_error <= 1e-5 * max(1.0, flow.output_scale), (layer, flow.identity_error)


@pytest.mark.parametrize("name", ["gemma3", "phi3"])
def test_logit_attribution_adds_up_through_the_post_norms(name: str) -> None:
    model, logits, trace = traced(name)
    for position in (0, 9):
        split = logit_attribution(model, trace, logits, position=position, target=7, versus=11, top=2)
        assert abs(split.total - split.logit) < 1e-4 * max(1.0, abs(split.logit)), (split.total, split.logit)
        for source in split.top:  # each top head, split again by the key it read
            assert source.identity_error < 1e-4


def test_logit_attribution_refuses_capped_logits_by_name() -> None:
    model, logits, trace = traced("gemma2")
    with pytest.raises(NotAdditive, match="soft-caps its logits"):
        logit_attribution(model, trace, logits, position=3, target=7)


@pytest.mark.parametrize("name", FAMILIES)
def test_the_lens_last_reading_is_the_models_logits(name: str) -> None:
    model, logits, trace = traced(name)
    lens = logit_lens(model, trace)
    assert float((lens.logits[-1] - logits[0]).abs().max()) < 1e-5


@pytest.mark.parametrize("name", FAMILIES)
def test_the_models_own_mask_gives_back_its_pattern(name: str) -> None:
    model = new_family_model(name, sliding_window=None, window_layers=None, rope_base_local=None)
    _, trace = model.run_with_trace(TOKENS)
    causal = torch.ones(10, 10, dtype=torch.bool).tril()
    pattern = patterns_under_mask(model, TOKENS, causal, None, 1)
    assert float((pattern - trace[stage_name("pattern", 1)]).abs().max()) < 1e-6


@pytest.mark.parametrize("name", FAMILIES)
def test_requantized_products_with_the_weights_kept_are_the_model(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every product the re-quantization redoes (through the post norms, the embedding scale, the logit cap), with
    the weights left as they are, gives back the float32 run."""
    model = new_family_model(name)
    monkeypatch.setattr(quant, "requantized", lambda weight, kind: weight.float())
    plan = quant.model_plan(model, {})
    result = quant.quantization(model, TOKENS, plan, activations=False, requant="Q8_0")
    assert result.requant is not None and max(result.requant.kl) < 1e-9 and all(result.requant.agree)


def test_no_mask_and_no_scale_edits_use_the_cap_and_the_models_scale() -> None:
    model, _, plain = traced("gemma2")
    _, trace = model.run_with_trace(TOKENS, edits=Interventions(no_mask=True))
    # layer 0 reads what it read without the edit: its pattern is the softmax of its capped scores, no mask
    assert torch.allclose(trace[stage_name("pattern", 0)], torch.softmax(plain[stage_name("scores_capped", 0)], -1),
                          atol=1e-6)
    _, trace = model.run_with_trace(TOKENS, edits=Interventions(no_scale=True))
    assert torch.allclose(trace[stage_name("scores_scaled", 1)], trace[stage_name("scores_raw", 1)], atol=1e-5)


def view(model: torch.nn.Module, trace: dict[str, torch.Tensor], layer: int) -> View:
    tokens = [Token(int(i), f"t{i}", 0, 0) for i in TOKENS[0]]
    return View(model=model, trace=trace, tokens=tokens, text="", layer=layer, head=0)


@pytest.mark.parametrize("name", FAMILIES)
def test_rope_turns_reads_the_turned_pairs(name: str) -> None:
    model, _, trace = traced(name)
    claim = rope_turns(view(model, trace, 1))
    assert claim.values["pairs"] == model.cfg.rotary_dims // 2
    # the angle the first pair turns from position 0 to 1 is its frequency (base^0 = 1, factor 1 or 3 for phi3's
    # long set): 1 rad, or 1/3
    expected = 1 / 3 if name == "phi3" else 1.0
    assert abs(claim.values["first"] - expected) < 1e-3


def test_unscaled_peakier_reports_the_models_divisor() -> None:
    model, _, trace = traced("gemma2")
    claim = unscaled_peakier(view(model, trace, 0))
    assert claim.values["sqrt_d_k"] == round(12 ** 0.5, 4)
    # the learner's sentence names that divisor, not √d_k, in both languages
    for lang in ("en", "zh"):
        said = line(claim.kind, claim.values, ui_words(lang))
        assert "√12 = " in said and "3.46" in said, said
    plain = unscaled_peakier(view(new_family_model("phi3"), traced("phi3")[2], 0))
    assert "pattern" not in plain.values and "√d_k = 2.83" in line(plain.kind, plain.values, ui_words("en"))


@pytest.mark.parametrize("name", ["gemma2", "phi3"])
def test_heads_split_says_the_real_width_of_the_heads(name: str) -> None:
    model, _, trace = traced(name)
    claim = heads_split(view(model, trace, 0))
    assert claim.holds and claim.values["d_head"] == model.cfg.d_head
    for lang in ("en", "zh"):
        said = line(claim.kind, claim.values, ui_words(lang))
        if name == "gemma2":  # 4 heads × 16 = 64, d_model 32
            assert claim.values["width"] == 64 and "4 × 16 = 64" in said and "32" in said, said
        else:  # 4 heads × 8 = d_model 32
            assert "width" not in claim.values and "4 × 8 = d_model 32" in said, said
