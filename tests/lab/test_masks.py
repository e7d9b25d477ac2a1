"""lab/masks.py: the masks are the model's own, and padding changes nothing before it in a decoder."""

from __future__ import annotations

import torch

from lab import masks as mask_lab
from model.config import TransformerConfig
from model.edits import Interventions
from model.transformer import Transformer

IDS = torch.tensor([[5, 9, 2, 7, 7, 1, 3, 8]])  # [batch, pos]


def make(**changes: object) -> Transformer:
    base: dict[str, object] = dict(architecture="decoder", vocab_size=16, d_model=32, n_layers=2, n_heads=4, n_ctx=16,
                                   pos_encoding="rope", seed=3, init_std=0.3)
    return Transformer(TransformerConfig(**{**base, **changes})).eval()  # type: ignore[arg-type]


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
