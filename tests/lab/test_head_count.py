"""lab/head_count.py: re-splitting a layer's real q and k into h heads of d_k = width / h."""

from __future__ import annotations

import math

import pytest
import torch

from lab.head_count import (
    RTOL,
    LayerQK,
    divisors,
    layer_qk,
    own_split_diff,
    row_entropy,
    score_core,
    split_scores,
    splits,
    uniform_entropy,
)
from model.config import TransformerConfig
from model.hooks import AttentionLayer
from model.transformer import Transformer


def traced(cfg: TransformerConfig, n: int, target: int | None = None) -> dict[str, torch.Tensor]:
    model = Transformer(cfg).eval()
    tokens = torch.arange(1, n + 1).remainder(cfg.vocab_size)[None]  # [1, pos]
    target_tokens = None if target is None else torch.arange(2, target + 2)[None]  # [1, target_pos]
    _, trace = model.run_with_trace(tokens, target_tokens=target_tokens)
    return dict(trace)


# smollm2-like: RoPE, GQA (6 query heads read 2 K/V heads), RMSNorm, SwiGLU
LLAMA_LIKE = TransformerConfig(architecture="decoder", vocab_size=64, d_model=48, n_layers=2, n_heads=6, n_kv_heads=2,
                               n_ctx=64, pos_encoding="rope", norm="rmsnorm", activation="swiglu", bias=False, seed=5)
GPT2_LIKE = TransformerConfig(architecture="decoder", vocab_size=64, d_model=32, n_layers=1, n_heads=4, n_ctx=64,
                              pos_encoding="learned", seed=6)


@pytest.mark.parametrize("cfg", [LLAMA_LIKE, GPT2_LIKE], ids=["rope-gqa", "learned-mha"])
def test_the_models_own_head_count_reproduces_its_traced_scores(cfg: TransformerConfig) -> None:
    trace = traced(cfg, 20)
    where = AttentionLayer(None, cfg.n_layers - 1)
    qk = layer_qk(trace, where)
    assert qk.rotated == (cfg.pos_encoding == "rope")
    assert qk.q.shape == qk.k.shape == (20, cfg.n_heads * cfg.d_head)
    own = split_scores(qk.q, qk.k, cfg.n_heads)  # [head, q_pos, k_pos]
    assert torch.allclose(own.float(), trace[where.stage("scores_raw")][0], atol=1e-5, rtol=1e-5)
    assert own_split_diff(qk) < 1e-5
    # and the scores the model divided: hook_scores_scaled = raw / √d_head (no ALiBi, no per-layer scale here)
    scaled = trace[where.stage("scores_scaled")][0].double()
    assert torch.allclose(own / math.sqrt(cfg.d_head), scaled, atol=1e-5)


def test_ranks_never_exceed_the_bound_and_it_bites_on_a_long_sentence() -> None:
    qk = layer_qk(traced(LLAMA_LIKE, 30), AttentionLayer(None, 0))
    found = splits(qk)
    assert [s.heads for s in found] == divisors(48) == [1, 2, 3, 4, 6, 8, 12, 16, 24, 48]
    for s in found:
        assert s.d_k * s.heads == 48 and s.bound == min(30, s.d_k) and len(s.ranks) == s.heads
        assert max(s.ranks) <= s.bound
    # GQA: at h = 2 each cut holds three query heads that read one K/V head (8 numbers wide) three times over
    assert found[1].heads == 2 and max(found[1].ranks) <= LLAMA_LIKE.d_head < found[1].bound
    narrow = [s for s in found if s.d_k < 30]
    assert narrow and all(min(s.ranks) == s.d_k for s in narrow if s.d_k <= 4)  # the bound is reached, not just obeyed


def test_generic_vectors_reach_the_bound_so_the_tolerance_hides_nothing() -> None:
    gen = torch.Generator().manual_seed(0)
    n, width = 12, 24
    q, k = torch.randn(n, width, generator=gen), torch.randn(n, width, generator=gen)
    allowed = torch.ones(n, n, dtype=torch.bool).tril()
    qk = LayerQK(q, k, allowed, split_scores(q, k, 4).float(), 4, False)
    for s in splits(qk):
        assert s.ranks == [min(n, s.d_k)] * s.heads


@pytest.mark.parametrize("heads", [1, 4, 8, 24])
def test_the_ranks_are_taken_on_a_matrix_with_the_scores_singular_values(heads: int) -> None:
    gen = torch.Generator().manual_seed(1)
    q, k = torch.randn(10, 24, generator=gen), torch.randn(13, 24, generator=gen)
    k[:, :3] = 0  # a key side of lower rank in the first heads
    scores, core = split_scores(q, k, heads), score_core(q, k, heads)
    m = min(core.shape[-2:])
    assert m == min(10, 24 // heads)
    full = torch.linalg.svdvals(scores)[:, :m]  # [head, m]: the rest are zero
    assert torch.allclose(torch.linalg.svdvals(core), full, atol=1e-9)
    assert torch.equal(torch.linalg.matrix_rank(core, rtol=RTOL), torch.linalg.matrix_rank(scores, rtol=RTOL))


def test_entropy_matches_a_hand_computation() -> None:
    q = torch.tensor([[1.0, 0.0, 2.0, 0.0], [0.0, 1.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0]])  # [q_pos 3, width 4]
    k = torch.tensor([[1.0, 2.0, 0.0, 1.0], [0.5, 0.0, 1.0, 0.0], [2.0, 1.0, 1.0, 0.0]])  # [k_pos 3, width 4]
    allowed = torch.ones(3, 3, dtype=torch.bool).tril()
    got = row_entropy(split_scores(q, k, 2), allowed, 2)  # [head 2, row 3]
    for head in range(2):
        for row in range(3):
            dots = [sum(float(q[row, head * 2 + j] * k[key, head * 2 + j]) for j in range(2)) / math.sqrt(2)
                    for key in range(row + 1)]
            weights = [math.exp(d) / sum(math.exp(e) for e in dots) for d in dots]
            expected = -sum(w * math.log(w) for w in weights)
            assert abs(float(got[head, row]) - expected) < 1e-12
    assert got[:, 0].abs().max() < 1e-12  # the first row sees one key: certain
    assert abs(uniform_entropy(allowed) - (math.log(1) + math.log(2) + math.log(3)) / 3) < 1e-12
    mean = splits(LayerQK(q, k, allowed, split_scores(q, k, 2).float(), 2, False))[1].entropy
    assert abs(mean - float(got.mean())) < 1e-12


def test_cross_attention_reads_the_encoder_keys_with_no_mask() -> None:
    cfg = TransformerConfig(architecture="encoder-decoder", vocab_size=64, d_model=32, n_layers=1,
                            n_decoder_layers=1, n_heads=4, n_ctx=64, pos_encoding="sinusoidal", seed=3)
    trace = traced(cfg, 9, target=5)
    qk = layer_qk(trace, AttentionLayer("decoder", 0, cross=True))
    assert qk.q.shape == (5, 32) and qk.k.shape == (9, 32) and bool(qk.allowed.all())
    assert own_split_diff(qk) < 1e-5
    assert all(max(s.ranks) <= min(5, s.d_k) for s in splits(qk))
