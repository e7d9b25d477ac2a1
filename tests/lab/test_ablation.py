"""lab/ablation.py: every head ablated alone; the same edit naming no head changes nothing, and a head's effect is
the change the model itself shows when that head's output is zeroed."""

from __future__ import annotations

import pytest
import torch

from analysis.ablation import ablation_edits, logits_with_edits
from lab.ablation import ablation_with_check
from model.config import TransformerConfig
from model.transformer import Transformer

IDS = [5, 9, 2, 7, 7, 1, 3]


def make(**changes: object) -> Transformer:
    base: dict[str, object] = dict(vocab_size=40, d_model=32, n_layers=2, n_heads=4, n_ctx=32, seed=6, init_std=0.3)
    return Transformer(TransformerConfig(**{**base, **changes})).eval()  # type: ignore[arg-type]


@pytest.mark.parametrize("position", [None, 2])
def test_no_head_changes_nothing_and_every_head_is_ablated_alone(position: int | None) -> None:
    model = make()
    checked = ablation_with_check(model, IDS, None, position)
    result = checked.result
    assert checked.none_prob_change == pytest.approx(0.0, abs=1e-6)
    assert checked.none_loss_change == pytest.approx(0.0, abs=1e-6)
    assert [(e.layer, e.head) for e in result.heads] == [(layer, head) for layer in range(2) for head in range(4)]
    assert result.position == (len(IDS) - 1 if position is None else position)
    assert any(abs(e.prob_change) > 1e-4 for e in result.heads), "ablating a head changes the prediction"
    # one head's effect, recomputed: its output zeroed by the edit, the chosen token's probability read off
    effect = result.heads[5]
    tokens = torch.tensor([IDS])
    logits, _ = logits_with_edits(model, tokens, None, ablation_edits(None, effect.layer, [effect.head]))
    prob = float(torch.softmax(logits[result.position], -1)[result.chosen_id])
    assert prob == pytest.approx(effect.prob, abs=1e-6)
    assert effect.prob_change == pytest.approx(effect.prob - result.clean_prob, abs=1e-9)


def test_an_encoder_decoder_ablates_its_decoder_heads() -> None:
    model = make(architecture="encoder-decoder")
    checked = ablation_with_check(model, IDS, [1, 4, 2], None)
    assert checked.result.stack == "decoder" and len(checked.result.heads) == 2 * 4
    assert checked.none_prob_change == pytest.approx(0.0, abs=1e-6)
