"""FlashAttention from scratch: the tiled online softmax equals naive attention and the model's own hook_z."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from lab.flash import (
    flash_attention,
    flash_for_head,
    flash_traffic,
    head_inputs,
    head_stage_names,
    memory_crossover,
    naive_attention,
    standard_traffic,
    traffic_curves,
)
from tests.lab.head_models import HEAD_MODELS, head_model

TOL = 1e-5


def qkv(q_len: int, k_len: int, d_head: int = 8, lead: tuple[int, ...] = (), seed: int = 0) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(*lead, n, d_head, generator=g) * 2 for n in (q_len, k_len, k_len))


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("block_q", "block_k"), [(1, 1), (1, 7), (3, 5), (4, 4), (8, 3), (16, 16), (64, 64), (5, 100)])
def test_tiled_equals_naive_for_every_block_size(causal: bool, block_q: int, block_k: int) -> None:
    q, k, v = qkv(37, 37)
    result = flash_attention(q, k, v, block_q=block_q, block_k=block_k, causal=causal)
    torch.testing.assert_close(result.output, naive_attention(q, k, v, causal=causal), atol=TOL, rtol=0)


@pytest.mark.parametrize(("q_len", "k_len"), [(5, 19), (19, 5), (1, 1)])
def test_rectangular_and_with_leading_head_dimension(q_len: int, k_len: int) -> None:
    q, k, v = qkv(q_len, k_len, lead=(3,))
    slope = torch.tensor([0.5, 0.25, 0.125])  # one ALiBi slope per head
    for causal in (False, True):
        tiled = flash_attention(q, k, v, block_q=4, block_k=6, causal=causal, alibi_slope=slope).output
        torch.testing.assert_close(tiled, naive_attention(q, k, v, causal=causal, alibi_slope=slope), atol=TOL, rtol=0)


def test_window_and_alibi_and_scale() -> None:
    q, k, v = qkv(30, 30)
    for causal in (False, True):
        kw: dict[str, Any] = {"causal": causal, "window": 4, "alibi_slope": 0.3, "scale": 0.7}
        result = flash_attention(q, k, v, block_q=5, block_k=3, **kw)
        torch.testing.assert_close(result.output, naive_attention(q, k, v, **kw), atol=TOL, rtol=0)
        assert result.skipped_tiles > 0  # tiles outside the window are never computed


def test_states_are_the_online_softmax() -> None:
    """After the last key tile of a query tile: m is the row max, l = Σ exp(s - m), acc / l the output."""
    q, k, v = qkv(12, 12)
    result = flash_attention(q, k, v, block_q=4, block_k=5)
    scores = q @ k.T / 8**0.5  # [q_pos, k_pos]
    last = [t for t in result.tiles if t.k_block == 2]
    assert [t.q_range for t in last] == [(0, 4), (4, 8), (8, 12)]
    for tile in last:
        rows = scores[tile.q_range[0] : tile.q_range[1]]
        torch.testing.assert_close(tile.m, rows.amax(-1), atol=TOL, rtol=0)
        torch.testing.assert_close(tile.l, torch.exp(rows - tile.m[:, None]).sum(-1), atol=TOL, rtol=1e-6)
    torch.testing.assert_close(result.logsumexp, torch.logsumexp(scores, -1), atol=TOL, rtol=0)
    # the first tile of a row has seen only its first key tile: its state is that tile's partial softmax
    first = result.tiles[0]
    part = scores[0:4, 0:5]
    torch.testing.assert_close(first.acc / first.l[:, None], torch.softmax(part, -1) @ v[0:5], atol=TOL, rtol=0)


def test_no_state_holds_the_full_matrix() -> None:
    q, k, v = qkv(256, 256)
    result = flash_attention(q, k, v, block_q=16, block_k=32, causal=True, record=False)
    assert result.tiles == []
    assert result.largest_bytes == 16 * 32 * 4  # one tile of float32 scores
    assert result.n_squared_bytes == 256 * 256 * 4 and result.largest_bytes * 128 == result.n_squared_bytes
    assert result.computed_tiles + result.skipped_tiles == 16 * 8
    assert result.skipped_tiles > 0  # the causal mask hides whole tiles above the diagonal


def test_rows_that_see_nothing_are_zero_as_in_the_model() -> None:
    q, k, v = qkv(6, 6)
    result = flash_attention(q, k, v, block_q=2, block_k=2, window=1)  # each query sees itself only
    torch.testing.assert_close(result.output, v, atol=TOL, rtol=0)
    with pytest.raises(ValueError):
        flash_attention(q, k, v, block_q=0, block_k=2)


# ---------------------------------------------------------------- the model's own heads

@pytest.mark.parametrize("name", list(HEAD_MODELS))
def test_equals_the_models_hook_z_for_every_head(name: str) -> None:
    model = head_model(name)
    tokens = torch.randint(0, 40, (1, 23), generator=torch.Generator().manual_seed(1))
    for layer in range(2):
        for head in range(4):
            result, inputs = flash_for_head(model, tokens, layer, head, block_q=4, block_k=6)
            torch.testing.assert_close(result.output, inputs.z, atol=TOL, rtol=0)


def test_equals_hook_z_in_the_shipped_model(tiny_gpt: Any) -> None:
    model = tiny_gpt.model  # RoPE, GQA (more query heads than K/V heads)
    ids = [t.id for t in tiny_gpt.tokenizer.encode("The cat sat on the mat, and the cat sat again.")]
    tokens = torch.tensor([ids])
    assert model.cfg.kv_heads < model.cfg.n_heads
    for head in (0, model.cfg.n_heads // 2, model.cfg.n_heads - 1):
        for block_q, block_k in ((1, 1), (4, 8), (16, 16)):
            result, inputs = flash_for_head(model, tokens, 2, head, block_q=block_q, block_k=block_k)
            assert (result.output - inputs.z).abs().max() <= TOL


def test_encoder_decoder_stacks_and_cross_attention(translator: Any) -> None:
    model = translator.model
    source, target = torch.tensor([[4, 5, 6, 7, 8]]), torch.tensor([[1, 9, 10]])
    for stack, cross in (("encoder", False), ("decoder", False), ("decoder", True)):
        result, inputs = flash_for_head(model, source, 1, 2, block_q=2, block_k=2, stack=stack, cross=cross,
                                        target_tokens=target)
        torch.testing.assert_close(result.output, inputs.z, atol=TOL, rtol=0)
    with pytest.raises(ValueError):
        head_stage_names(model, 0, stack=None)
    with pytest.raises(ValueError):
        head_stage_names(model, 0, stack="encoder", cross=True)
    with pytest.raises(ValueError):
        _, trace = model.run_with_trace(source, target_tokens=target)
        head_inputs(model, trace, 0, 9, stack="encoder")


@pytest.mark.parametrize(("block_q", "block_k", "d_head"), [(4, 4, 32), (3, 2, 8), (16, 16, 8), (2, 8, 64)])
def test_tiling_holds_less_than_the_matrix_from_the_crossover_on(block_q: int, block_k: int, d_head: int) -> None:
    n = memory_crossover(block_q, block_k, d_head)
    for length, saves in ((n - 1, False), (n, True), (4 * n, True)):
        q, k, v = qkv(length, length, d_head)
        result = flash_attention(q, k, v, block_q=block_q, block_k=block_k, causal=True, record=False)
        assert (result.largest_bytes < result.n_squared_bytes) == saves, (length, result.largest_bytes)


@pytest.mark.parametrize(("n_q", "n_k", "block_q", "block_k"), [(13, 11, 4, 3), (8, 8, 1, 8), (5, 9, 16, 2)])
def test_the_loops_reads_and_writes_are_the_traffic_formula(n_q: int, n_k: int, block_q: int, block_k: int) -> None:
    generator = torch.Generator().manual_seed(0)
    q = torch.randn(3, n_q, 8, generator=generator)  # [head, q_pos, d_head]
    k, v = torch.randn(3, n_k, 8, generator=generator), torch.randn(3, n_k, 8, generator=generator)
    result = flash_attention(q, k, v, block_q=block_q, block_k=block_k)
    formula = flash_traffic(n_q, n_k, 8, block_q)
    assert (result.numbers_read, result.numbers_written) == (3 * formula.read, 3 * formula.written)


def test_masked_tiles_are_never_loaded() -> None:
    q = torch.randn(12, 8)  # [pos, d_head]
    result = flash_attention(q, q, q, block_q=3, block_k=3, causal=True)
    full = flash_traffic(12, 12, 8, 3)
    assert result.skipped_tiles == 6  # the 4 × 4 tiles above the diagonal
    assert result.numbers_read == full.read - result.skipped_tiles * 2 * 3 * 8  # no K, V tile of those is read
    assert result.numbers_written == full.written


def test_standard_attention_moves_quadratic_traffic_and_large_tiles_move_less() -> None:
    standard = standard_traffic(1024, 1024, 64)
    assert standard.read == 3 * 1024 * 64 + 2 * 1024**2 and standard.written == 2 * 1024**2 + 1024 * 64
    ratios = [standard_traffic(n, n, 64).total / flash_traffic(n, n, 64, 128).total for n in (1024, 4096, 16384)]
    assert ratios == sorted(ratios) and ratios[0] > 3.7 and ratios[-1] < 2 * 128 / 64  # → 2·block_q/d_head = 4
    assert flash_traffic(4096, 4096, 64, 4).total > standard_traffic(4096, 4096, 64).total  # tiny tiles re-read K, V


def test_the_traffic_curves_start_at_the_text_and_are_the_formulas_in_bytes() -> None:
    curves = traffic_curves(100, 64, 4, 128, bytes_per_number=2)
    assert curves.lengths == [100, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
    assert curves.standard == [2 * standard_traffic(n, n, 64).total for n in curves.lengths]
    assert curves.flash == [2 * flash_traffic(n, n, 64, 4).total for n in curves.lengths]
    assert curves.flash_large_block == [2 * flash_traffic(n, n, 64, 128).total for n in curves.lengths]
    assert all(big < small for big, small in zip(curves.flash_large_block[1:], curves.flash[1:], strict=True))
