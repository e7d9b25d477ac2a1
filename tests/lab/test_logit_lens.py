"""lab/logit_lens.py: the lens reads the residual after every block; its last layer is the model's own logits."""

from __future__ import annotations

import pytest
import torch

from lab.logit_lens import lens_with_check
from model.config import TransformerConfig
from model.transformer import Transformer

IDS = [5, 9, 2, 7, 7, 1, 3]


def make(**changes: object) -> Transformer:
    base: dict[str, object] = dict(vocab_size=40, d_model=32, n_layers=3, n_heads=4, n_ctx=32, seed=5, init_std=0.3)
    return Transformer(TransformerConfig(**{**base, **changes})).eval()  # type: ignore[arg-type]


@pytest.mark.parametrize("changes", [{}, {"pos_encoding": "rope", "norm": "rmsnorm"}, {"norm_placement": "post"}],
                         ids=["sinusoidal", "rope-rmsnorm", "post-ln"])
def test_the_last_layer_is_the_models_logits(changes: dict[str, object]) -> None:
    model = make(**changes)
    logits, trace = model.run_with_trace(torch.tensor([IDS]))  # type: ignore[arg-type]
    lens, diff = lens_with_check(model, trace, logits, k=3, ids=IDS)
    assert diff < 1e-5
    assert lens.layers == ["embed", "0", "1", "2"]
    assert tuple(lens.top_ids.shape) == (4, len(IDS), 3)  # [layer, pos, k]
    # each layer's top token is the argmax of that layer's lens logits
    assert torch.equal(lens.top_ids[..., 0], lens.logits.argmax(-1))


def test_an_encoder_decoder_is_read_at_its_decoder() -> None:
    model = make(architecture="encoder-decoder")
    target = [1, 4, 2]
    logits, trace = model.run_with_trace(torch.tensor([IDS]), target_tokens=torch.tensor([target]))  # type: ignore[arg-type]
    lens, diff = lens_with_check(model, trace, logits, k=2, ids=target)
    assert diff < 1e-5 and lens.logits.shape[1] == len(target)


def test_a_model_without_an_unembedding_is_refused() -> None:
    model = make(architecture="encoder", lm_head=False)
    logits, trace = model.run_with_trace(torch.tensor([IDS]))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unembedding"):
        lens_with_check(model, trace, logits, k=2, ids=IDS)
