"""Residual dropout for training (training.regularization): on only while training, nothing left on the model."""

from __future__ import annotations

import torch

from model import Transformer, TransformerConfig
from training.language_modelling import LanguageModelTask
from training.regularization import dropout_stages, residual_dropout


def small_model() -> Transformer:
    return Transformer(TransformerConfig(d_model=32, n_layers=2, n_heads=4, vocab_size=50, n_ctx=16, seed=3))


def test_dropout_edits_what_joins_the_residual_stream() -> None:
    model = small_model()
    assert dropout_stages(model) == [
        "hook_embed",
        "blocks.0.hook_attn_out",
        "blocks.0.hook_mlp_out",
        "blocks.1.hook_attn_out",
        "blocks.1.hook_mlp_out",
    ]


def test_dropout_acts_only_in_training_mode_and_leaves_nothing_behind() -> None:
    model = small_model().train()
    tokens = torch.randint(0, 50, (2, 12), generator=torch.Generator().manual_seed(0))
    plain = model(tokens)
    with residual_dropout(model, 0.5):
        dropped = model(tokens)
    assert (dropped - plain).abs().max() > 1e-3  # units were dropped
    assert torch.equal(model(tokens), plain)  # and after the block, nothing is
    with residual_dropout(model, 0.0):
        assert torch.equal(model(tokens), plain)
    model.eval()
    with residual_dropout(model, 0.5):
        assert torch.equal(model(tokens), plain)  # evaluation never drops
    # the explorer's trace still sees the deterministic model
    _, trace = model.run_with_trace(tokens[:1])
    assert "hook_embed" in trace


def test_the_language_model_task_applies_its_dropout() -> None:
    model = small_model().train()
    tokens = torch.randint(1, 50, (8, 16), generator=torch.Generator().manual_seed(1))
    batch = (tokens[:, :-1], tokens[:, 1:])
    plain = LanguageModelTask(batcher=None, dropout=0.0).loss(model, batch)  # type: ignore[arg-type]
    torch.manual_seed(0)
    noisy = LanguageModelTask(batcher=None, dropout=0.9).loss(model, batch)  # type: ignore[arg-type]
    assert not torch.isclose(plain, noisy)
