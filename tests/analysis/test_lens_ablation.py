"""Logit lens: the last layer's reading is the model's logits. Head ablation: ablating no head changes nothing."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from analysis.ablation import ablation_edits, head_ablation, logits_with_edits
from analysis.lens import lens_stage_names, logit_lens, run_logit_lens
from analysis.readouts import sequence_loss
from model import Transformer, TransformerConfig
from model.edits import Interventions


def make(**overrides: Any) -> Transformer:
    base: dict[str, Any] = {"vocab_size": 30, "d_model": 32, "n_layers": 3, "n_heads": 4, "n_ctx": 32, "seed": 5}
    return Transformer(TransformerConfig(**(base | overrides))).eval()


TOKENS = torch.tensor([[1, 4, 9, 16, 25, 6, 13, 2]])


@pytest.mark.parametrize(
    "overrides",
    [{}, {"norm_placement": "post", "final_norm": False}, {"norm": "rmsnorm", "pos_encoding": "rope"}],
    ids=["pre-ln", "post-ln", "rms-rope"],
)
def test_last_layer_equals_the_models_logits(overrides: dict[str, Any]) -> None:
    model = make(**overrides)
    lens, logits = run_logit_lens(model, TOKENS, k=3)
    assert lens.layers == ["embed", "0", "1", "2"]
    assert lens.logits.shape == (4, 8, 30) and lens.top_ids.shape == (4, 8, 3)
    torch.testing.assert_close(lens.logits[-1], logits.float(), atol=1e-5, rtol=0)
    assert torch.equal(lens.top_ids[-1, :, 0], logits.argmax(-1))
    assert torch.all(lens.top_probs[..., :-1] >= lens.top_probs[..., 1:])  # most likely first


def test_earlier_layers_read_through_the_same_norm_and_unembedding() -> None:
    model = make()
    _, trace = model.run_with_trace(TOKENS, lens_stage_names(model))
    lens = logit_lens(model, trace, k=2, ids=TOKENS[0].tolist())
    by_hand = model.W_U(model.stack.ln_final(trace["blocks.0.hook_resid_post"][0]))  # [pos, d_vocab]
    torch.testing.assert_close(lens.logits[1], by_hand, atol=1e-6, rtol=0)
    assert lens.next_token_probs is not None and lens.next_token_probs.shape == (4, 7)
    probs = torch.softmax(lens.logits[2], -1)
    assert lens.next_token_probs[2, 3] == pytest.approx(float(probs[3, TOKENS[0, 4]]))


def test_shipped_models(tiny_gpt: Any, translator: Any) -> None:
    ids = [t.id for t in tiny_gpt.tokenizer.encode("Once upon a time there was a")]
    lens, logits = run_logit_lens(tiny_gpt.model, torch.tensor([ids]))
    torch.testing.assert_close(lens.logits[-1], logits.float(), atol=1e-5, rtol=0)
    source, target = torch.tensor([[5, 6, 7, 8]]), torch.tensor([[1, 9, 10, 11]])
    lens, logits = run_logit_lens(translator.model, source, target_tokens=target)
    assert lens.stages[0] == "decoder.blocks.0.hook_resid_pre"
    torch.testing.assert_close(lens.logits[-1], logits.float(), atol=1e-5, rtol=0)
    with pytest.raises(ValueError):
        run_logit_lens(translator.model, source)


def test_lens_needs_an_unembedding() -> None:
    with pytest.raises(ValueError):
        lens_stage_names(make(lm_head=False))


# ---------------------------------------------------------------- ablation


def test_ablating_no_head_changes_nothing() -> None:
    model = make()
    clean = model(TOKENS)
    nothing, _ = model.run_with_trace(TOKENS, [], edits=Interventions(ablate_heads=()))
    assert torch.equal(nothing, clean)
    none_here, _ = logits_with_edits(model, TOKENS, None, ablation_edits(None, 1, []))
    assert torch.equal(none_here, clean[0].float())


def test_one_head_ablated_is_lab_ones_intervention() -> None:
    model = make()
    report = head_ablation(model, TOKENS, position=5)
    assert len(report.heads) == 12 and report.position == 5
    effect = next(e for e in report.heads if (e.layer, e.head) == (1, 2))
    logits, _ = model.run_with_trace(TOKENS, [], edits=Interventions(ablate_heads=((1, 2),)))
    assert effect.loss == pytest.approx(sequence_loss(logits[0], TOKENS[0].tolist()), abs=1e-6)
    assert effect.prob == pytest.approx(float(torch.softmax(logits[0, 5], -1)[report.chosen_id]), abs=1e-6)
    assert report.clean_loss is not None and effect.loss_change == pytest.approx(effect.loss - report.clean_loss)
    clean = model(TOKENS)[0]
    assert report.chosen_id == int(clean[5].argmax())
    _, trace = model.run_with_trace(TOKENS, ["blocks.1.attn.hook_pattern"])
    assert effect.weights == pytest.approx(trace["blocks.1.attn.hook_pattern"][0, 2, 5].tolist())
    assert sum(effect.weights) == pytest.approx(1.0) and all(w == 0 for w in effect.weights[6:])  # causal


def test_ablation_changes_something_and_options_are_checked() -> None:
    model = make()
    report = head_ablation(model, TOKENS, chosen_id=7)
    assert report.position == 7 and report.chosen_id == 7
    assert any(abs(e.prob_change) > 0 for e in report.heads)
    with pytest.raises(ValueError):
        head_ablation(model, TOKENS, position=8)
    with pytest.raises(ValueError):
        head_ablation(model, TOKENS, chosen_id=30)


def test_encoder_decoder_ablates_decoder_heads_only(translator: Any) -> None:
    model = translator.model
    source, target = torch.tensor([[5, 6, 7, 8]]), torch.tensor([[1, 9, 10, 11]])
    report = head_ablation(model, source, target_tokens=target)
    assert report.stack == "decoder" and len(report.heads) == model.cfg.decoder_layers * model.cfg.n_heads
    assert report.position == 3 and len(report.heads[0].weights) == 4
    with pytest.raises(ValueError):
        head_ablation(model, source)
