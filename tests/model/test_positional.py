"""Positional encodings follow their papers' formulas."""

from __future__ import annotations

import math

import pytest
import torch

from model import Transformer, TransformerConfig
from model.positional import alibi_slopes, sinusoidal_table


@pytest.mark.parametrize(("pos", "i"), [(0, 0), (1, 0), (7, 3), (50, 10), (511, 31)])
def test_sinusoidal_matches_formula(pos: int, i: int) -> None:
    d_model = 64
    table = sinusoidal_table(512, d_model)
    angle = pos / 10000 ** (2 * i / d_model)
    assert table[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-5)
    assert table[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-5)


def test_rope_scores_depend_only_on_relative_offset() -> None:
    """With RoPE, q at position m and k at n give the same raw score for equal m - n."""
    cfg = TransformerConfig(pos_encoding="rope", d_model=32, n_heads=2, n_layers=1, vocab_size=8, seed=5)
    model = Transformer(cfg)
    same_token = torch.full((1, 12), 3)  # identical tokens: only position differs
    _, trace = model.run_with_trace(same_token, names=["blocks.0.attn.hook_scores_raw"])
    scores = trace["blocks.0.attn.hook_scores_raw"][0]  # [head, q_pos, k_pos]
    for offset in (0, 1, 4):
        diagonal = torch.diagonal(scores, offset=-offset, dim1=-2, dim2=-1)  # pairs with m - n = offset
        torch.testing.assert_close(diagonal, diagonal[:, :1].expand_as(diagonal), atol=1e-4, rtol=1e-4)
    assert not torch.allclose(scores[:, 5, 5], scores[:, 5, 1])  # and it does depend on the offset


def test_alibi_slopes_follow_the_paper() -> None:
    eight = alibi_slopes(8)
    torch.testing.assert_close(eight, torch.tensor([2.0 ** -(h + 1) for h in range(8)]))
    twelve = alibi_slopes(12)
    sixteen = [2.0 ** (-0.5 * (h + 1)) for h in range(16)]
    expected = [2.0 ** -(h + 1) for h in range(8)] + sixteen[0::2][:4]
    torch.testing.assert_close(twelve, torch.tensor(expected))
    assert alibi_slopes(4)[0].item() == pytest.approx(2.0**-2)


def test_learned_positions_are_the_trained_table() -> None:
    model = Transformer(TransformerConfig(pos_encoding="learned", n_layers=1))
    _, trace = model.run_with_trace(torch.arange(6)[None], names=["hook_pos_embed"])
    torch.testing.assert_close(trace["hook_pos_embed"], model.stack.embed.W_pos.weight[:6])
