"""lab/nope_attention.py on tiny random SmolLM3s (transformers' SmolLM3ForCausalLM, written and loaded as a Hugging
Face directory would be): in a NoPE layer a query's score on one key's vector is the same at every distance and the
traced scores are the unturned q·kᵀ; in a RoPE layer neither holds; and the probe is the model's own arithmetic (at
the key's real place it gives the traced score; on a repeated token in layer 0 it is the traced row itself)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from checkpoints import build_model
from checkpoints.hf import convert_hf
from lab.nope_attention import nope_attention
from model.hooks import stage_name
from model.transformer import Transformer

pytest.importorskip("transformers")
from tests.checkpoints.test_smollm3 import tiny_smollm3  # noqa: E402  (after the skip: it imports transformers)


def smollm3(**changes: Any) -> Transformer:
    hf = tiny_smollm3(**changes)
    with torch.no_grad():  # larger projections than transformers' init, so RoPE moves the scores visibly
        for name, param in hf.named_parameters():
            if name.endswith(("q_proj.weight", "k_proj.weight")):
                param.mul_(8.0)
    cfg, state = convert_hf(hf.config.to_dict(), dict(hf.state_dict()))
    return build_model(cfg, state).eval()


def test_a_nope_layer_scores_a_key_alike_at_every_distance_and_a_rope_layer_does_not() -> None:
    model = smollm3()  # layer 3 NoPE (every fourth layer), layer 2 RoPE
    _, trace = model.run_with_trace(torch.arange(3, 23)[None])
    for head in range(4):
        found = nope_attention(model, trace, nope_layer=3, rope_layer=2, head=head)
        nope, rope = found.layers
        assert (nope.layer, nope.positions, rope.layer, rope.positions) == (3, False, 2, True)
        assert found.query == 19 and found.key == int(nope.pattern[19].argmax())
        scale = max(abs(x) for x in nope.moved)
        assert nope.moved_spread <= 1e-6 * scale
        assert rope.moved_spread > 0.05 * max(abs(x) for x in rope.moved)
        # the traced scores are the unturned q·kᵀ in the NoPE layer only
        assert nope.unturned_diff <= 1e-5 * nope.score_scale
        assert rope.unturned_diff > 0.05 * rope.score_scale
        # at the key's real place the probe's score is the traced one, in both layers
        for view in (nope, rope):
            assert view.real_distance == 19 - found.key
            assert view.real_diff <= 1e-5 * max(1.0, view.score_scale)
            assert view.by_distance[0] == pytest.approx(float(torch.diagonal(view.pattern).mean()))
            assert len(view.moved) == 20 and len(view.by_distance) == 20


@pytest.mark.parametrize(("flags", "flat"), [([0, 1, 1, 1], True), ([1, 1, 1, 0], False)],
                         ids=["layer-0-nope", "layer-0-rope"])
def test_a_repeated_token_reads_the_probe_off_the_real_run(flags: list[int], flat: bool) -> None:
    """The same token at every position: layer 0's q and k are equal everywhere, so the traced row of the last query
    is the probe itself, key moved to every distance: one value throughout without positions, not with RoPE."""
    model = smollm3(no_rope_layers=flags)
    _, trace = model.run_with_trace(torch.full((1, 12), 7))
    found = nope_attention(model, trace, nope_layer=3 if flat is False else 0, rope_layer=1 if flat else 0, head=1,
                           key=0)
    layer0 = next(view for view in found.layers if view.layer == 0)
    row = trace[stage_name("scores_scaled", 0)][0, 1, 11].double()  # [k_pos]
    torch.testing.assert_close(torch.tensor(layer0.moved, dtype=torch.float64), row.flip(0), atol=1e-6, rtol=1e-5)
    spread = float(row.max() - row.min())
    if flat:
        assert spread <= 1e-6 * float(row.abs().max())
    else:
        assert spread > 0.05 * float(row.abs().max())
