"""head_ablation runs one forward pass per layer, copy b losing head b: the same numbers as one pass per head."""

from __future__ import annotations

import pytest
import torch

from analysis.ablation import ablation_edits, head_ablation, logits_with_edits
from analysis.readouts import sequence_loss
from model.config import TransformerConfig
from model.transformer import Transformer


@pytest.mark.parametrize("architecture", ["decoder", "encoder-decoder"])
def test_each_head_ablated_alone_gives_the_same_numbers(architecture: str) -> None:
    cfg = TransformerConfig(architecture=architecture, vocab_size=50, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2,
                            pos_encoding="rope", norm="rmsnorm", activation="swiglu", bias=False, seed=7,
                            init_std=0.3)
    model = Transformer(cfg).eval()
    tokens = torch.randint(0, 50, (1, 9), generator=torch.Generator().manual_seed(1))
    target = tokens[:, :6] if architecture == "encoder-decoder" else None
    result = head_ablation(model, tokens, position=4, target_tokens=target)
    read = target if target is not None else tokens
    ids = read[0].tolist()
    stack = "decoder" if architecture == "encoder-decoder" else None
    assert len(result.heads) == 8
    for effect in result.heads:
        logits, _ = logits_with_edits(model, tokens, target, ablation_edits(stack, effect.layer, [effect.head]))
        assert effect.loss == pytest.approx(sequence_loss(logits, ids), abs=1e-5)
        assert effect.prob == pytest.approx(float(torch.softmax(logits[4], -1)[result.chosen_id]), abs=1e-6)
    assert len({round(e.prob, 6) for e in result.heads}) > 1  # the heads do differ
