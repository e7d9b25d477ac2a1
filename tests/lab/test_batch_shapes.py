"""lab/batch_shapes.py: a view, transpose, repeat or reshape reads the same numbers at the new address, every step
equals the model's own stage, and no real query weighs a pad position."""

from __future__ import annotations

import pytest
import torch

from lab.batch_shapes import Cell, walk
from lab.norm_statistics import padded_batch
from model.config import TransformerConfig
from model.transformer import Transformer

MODELS = {
    "gqa rope decoder": dict(architecture="decoder", pos_encoding="rope", n_kv_heads=2, norm="rmsnorm"),
    "post-norm encoder": dict(architecture="encoder", norm_placement="post", lm_head=False),
    "alibi decoder": dict(architecture="decoder", pos_encoding="alibi"),
}
SENTENCES = [[1, 2, 3, 4, 5, 6], [7, 8, 9]]


def make(**changes: object) -> Transformer:
    cfg = TransformerConfig(vocab_size=20, d_model=32, n_layers=2, n_heads=4, n_ctx=16, seed=1, **changes)  # type: ignore[arg-type]
    return Transformer(cfg).eval()


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("cell", [Cell(0, 5, 3, 2), Cell(1, 2, 1, 0)])
def test_every_reshape_reads_the_same_numbers_and_every_step_is_the_models(name: str, cell: Cell) -> None:
    model = make(**MODELS[name])
    walked = walk(model, padded_batch(SENTENCES), 1, cell)
    names = [s.name for s in walked.steps]
    assert names[:3] == ["x", "q_flat", "q_view"] and names[-4:] == ["z_t", "z", "z_flat", "out"]
    assert ("q_rot" in names) == (MODELS[name].get("pos_encoding") == "rope")
    for before, step in zip(walked.steps, walked.steps[1:], strict=False):
        if step.reshape:
            assert step.values == pytest.approx(before.values, abs=1e-7), step.name
    shapes = {s.name: s.shape for s in walked.steps}
    assert shapes["q_flat"] == (2, 6, 32) and shapes["q_view"] == (2, 6, 4, 8) and shapes["q_t"] == (2, 4, 6, 8)
    assert shapes["k_t"] == (2, model.cfg.kv_heads, 6, 8) and shapes["scores"] == (2, 4, 6, 6)
    assert shapes["z"] == (2, 6, 4, 8) and shapes["out"] == (2, 6, 32)
    assert max(walked.model_diffs.values()) < 1e-5
    assert walked.pad_key_weight == 0.0  # the mask hides padding from every real query


def test_a_sentence_in_the_batch_reads_what_it_reads_alone() -> None:
    model = make(**MODELS["gqa rope decoder"])
    batched = walk(model, padded_batch(SENTENCES), 1, Cell(1, 2, 3, 1))
    alone = walk(model, padded_batch([SENTENCES[1]]), 1, Cell(0, 2, 3, 1))
    for a, b in zip(batched.steps, alone.steps, strict=True):
        assert a.values == pytest.approx(b.values, abs=1e-6), a.name
    assert torch.allclose(batched.pattern[1, :, :3, :3], alone.pattern[0], atol=1e-6)
