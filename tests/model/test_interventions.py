"""Interventions change one call of the model, and do exactly what their names say."""

from __future__ import annotations

import math

import pytest
import torch

from model.config import TransformerConfig
from model.edits import Interventions
from model.generate import generate
from model.transformer import Transformer

IDS = torch.tensor([[5, 9, 2, 7, 7, 1, 3, 8]])  # [batch, pos]


def make(**changes: object) -> Transformer:
    base: dict[str, object] = dict(architecture="decoder", vocab_size=16, d_model=32, n_layers=2, n_heads=4, n_ctx=16,
                                   pos_encoding="rope", seed=3)
    return Transformer(TransformerConfig(**{**base, **changes})).eval()  # type: ignore[arg-type]


@pytest.mark.parametrize("pos_encoding", ["rope", "alibi", "sinusoidal"])
def test_no_scale_is_the_same_sum_divided_by_one(pos_encoding: str) -> None:
    model = make(pos_encoding=pos_encoding)
    _, plain = model.run_with_trace(IDS)
    _, changed = model.run_with_trace(IDS, edits=Interventions(no_scale=True))
    a = "blocks.0.attn."
    bias = plain[a + "hook_scores_scaled"] - plain[a + "hook_scores_raw"] / math.sqrt(model.cfg.d_head)  # ALiBi or 0
    torch.testing.assert_close(changed[a + "hook_scores_scaled"], changed[a + "hook_scores_raw"] + bias)
    expected = torch.softmax(changed[a + "hook_attn_scores"], dim=-1)
    torch.testing.assert_close(changed[a + "hook_pattern"], expected)
    # and plain tracing is untouched by an earlier intervened call: edits live on one trace only
    _, again = model.run_with_trace(IDS)
    torch.testing.assert_close(again[a + "hook_pattern"], plain[a + "hook_pattern"])


def test_no_mask_lets_a_decoder_peek_and_changes_nothing_for_an_encoder() -> None:
    decoder = make()
    plain, _ = decoder.run_with_trace(IDS)
    peeking, trace = decoder.run_with_trace(IDS, edits=Interventions(no_mask=True))
    assert (trace["blocks.0.attn.hook_pattern"][0, :, 0, 1:] > 0).all()  # the first token now sees the future
    assert not torch.allclose(plain[0, :-1], peeking[0, :-1])  # earlier positions' logits change
    encoder = make(architecture="encoder", pos_encoding="learned", lm_head=False)
    plain, _ = encoder.run_with_trace(IDS)
    same, _ = encoder.run_with_trace(IDS, edits=Interventions(no_mask=True))
    torch.testing.assert_close(same, plain)


def test_a_window_hides_distant_keys() -> None:
    _, trace = make().run_with_trace(IDS, edits=Interventions(window=3))
    pattern = trace["blocks.1.attn.hook_pattern"][0]  # [head, q_pos, k_pos]
    q, k = torch.meshgrid(torch.arange(8), torch.arange(8), indexing="ij")
    assert (pattern[:, (q - k) >= 3] == 0).all() and (pattern[:, k > q] == 0).all()
    torch.testing.assert_close(pattern.sum(-1), torch.ones(4, 8))


def test_attention_temperature_divides_the_scores() -> None:
    _, trace = make().run_with_trace(IDS, edits=Interventions(temperature=4.0))
    _, plain = make().run_with_trace(IDS)
    a = "blocks.0.attn."
    expected = torch.softmax(plain[a + "hook_attn_scores"] / 4.0, dim=-1)
    torch.testing.assert_close(trace[a + "hook_pattern"], expected)


def test_ablating_heads() -> None:
    model = make(n_kv_heads=2)
    plain, _ = model.run_with_trace(IDS)
    same, _ = model.run_with_trace(IDS, edits=Interventions(ablate_heads=()))
    torch.testing.assert_close(same, plain)
    _, trace = model.run_with_trace(IDS, edits=Interventions(ablate_heads=tuple((1, h) for h in range(4))))
    bias = model.stack.blocks[1].attn.W_O.bias  # [d_model]
    torch.testing.assert_close(trace["blocks.1.hook_attn_out"][0], bias.expand(8, -1))
    _, one = model.run_with_trace(IDS, edits=Interventions(ablate_heads=((0, 2),)))
    assert (one["blocks.0.attn.hook_z"][0, :, 2] == 0).all() and (one["blocks.0.attn.hook_z"][0, :, 1] != 0).any()


def test_attention_alone_is_permutation_equivariant_and_positions_break_it() -> None:
    order = torch.tensor([3, 0, 7, 1, 6, 2, 5, 4])
    for pos_encoding, equivariant in (("none", True), ("sinusoidal", False)):
        encoder = make(architecture="encoder", pos_encoding=pos_encoding, lm_head=False)
        with torch.inference_mode():
            out, shuffled = encoder(IDS)[0], encoder(IDS[:, order])[0]  # [pos, d_model]
        assert torch.allclose(shuffled, out[order], atol=1e-5) is equivariant


def test_generation_runs_under_the_same_interventions() -> None:
    model = make()
    plain = generate(model, [1, 2, 3], max_new_tokens=6, temperature=0)
    assert generate(model, [1, 2, 3], max_new_tokens=6, temperature=0, edits=Interventions()) == plain
    changed = Interventions(no_mask=True, temperature=0.2)
    logits, _ = model.run_with_trace(torch.tensor([[1, 2, 3]]), edits=changed)  # [batch, pos, d_vocab]
    first = generate(model, [1, 2, 3], max_new_tokens=1, temperature=0, edits=changed)
    assert first == [int(logits[0, -1].argmax())]


def test_ablating_one_stack_of_an_encoder_decoder_leaves_the_other() -> None:
    model = make(architecture="encoder-decoder", pos_encoding="sinusoidal", n_decoder_layers=2)
    target = torch.tensor([[1, 2, 3]])
    _, plain = model.run_with_trace(IDS, target_tokens=target)
    _, both = model.run_with_trace(IDS, target_tokens=target, edits=Interventions(ablate_heads=((0, 1),)))
    _, decoder = model.run_with_trace(IDS, target_tokens=target,
                                      edits=Interventions(ablate_heads=((0, 1),), ablate_stack="decoder"))
    for stack in ("encoder", "decoder"):
        assert (both[f"{stack}.blocks.0.attn.hook_z"][0, :, 1] == 0).all()
    torch.testing.assert_close(decoder["encoder.blocks.0.attn.hook_z"], plain["encoder.blocks.0.attn.hook_z"])
    assert (decoder["decoder.blocks.0.attn.hook_z"][0, :, 1] == 0).all()
