"""Linear attention on a head's real q, k, v: the recurrent and quadratic forms agree, the softmax part is the
model's own head, entropy and max are what they say, causal rows never read the future, the memory formulas."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from lab.linear_attention import (
    cosine_and_relative_error,
    feature_map,
    linear_attention_for_head,
    linear_quadratic,
    linear_recurrent,
    linear_weights,
    memory,
    row_entropy,
)
from model.config import TransformerConfig
from model.transformer import Transformer
from tests.lab.head_models import HEAD_MODELS, head_model

TOL = 1e-5


def qkv(q_len: int, k_len: int, d: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(q_len, d, generator=g) * 1.5, torch.randn(k_len, d, generator=g) * 1.5,
            torch.randn(k_len, d, generator=g))


# ---------------------------------------------------------------- the two forms


@pytest.mark.parametrize(("q_len", "k_len", "causal"), [(9, 9, True), (9, 9, False), (1, 1, True), (4, 7, False)])
def test_the_recurrent_and_quadratic_forms_agree(q_len: int, k_len: int, causal: bool) -> None:
    q, k, v = qkv(q_len, k_len, 8)
    recurrent, quadratic = linear_recurrent(q, k, v, causal=causal), linear_quadratic(q, k, v, causal=causal)
    assert recurrent.shape == (q_len, 8)
    assert (recurrent - quadratic).abs().max() <= TOL


def test_the_implied_weights_are_the_normalised_feature_dot_products() -> None:
    q, k, _ = qkv(5, 5, 4, seed=3)
    for causal in (True, False):
        w = linear_weights(q, k, causal=causal)
        for i in range(5):
            seen = range(i + 1) if causal else range(5)
            dots = {j: float(feature_map(q[i].double()) @ feature_map(k[j].double())) for j in seen}
            for j in range(5):
                expected = dots[j] / sum(dots.values()) if j in dots else 0.0
                assert abs(float(w[i, j]) - expected) < 1e-12
            assert abs(float(w[i].sum()) - 1) < 1e-12
    x = torch.tensor([-2.0, 0.0, 3.0])
    assert torch.allclose(feature_map(x), torch.tensor([math.exp(-2.0), 1.0, 4.0]))


def test_causal_rows_never_use_future_tokens() -> None:
    q, k, v = qkv(8, 8, 6)
    q2, k2, v2 = q.clone(), k.clone(), v.clone()
    q2[5:], k2[5:], v2[5:] = torch.randn(3, 6), torch.randn(3, 6) * 4, torch.randn(3, 6) * 4
    for form in (linear_recurrent, linear_quadratic):
        before, after = form(q, k, v, causal=True), form(q2, k2, v2, causal=True)
        assert torch.equal(before[:5], after[:5]) and not torch.allclose(before[5:], after[5:])
    assert torch.equal(linear_weights(q, k, causal=True)[:5], linear_weights(q2, k2, causal=True)[:5])
    # without the mask (an encoder) every row reads every key
    full, changed = linear_recurrent(q, k, v, causal=False), linear_recurrent(q2, k2, v2, causal=False)
    assert not torch.allclose(full[:5], changed[:5])


def test_a_later_token_of_the_text_leaves_earlier_rows_of_a_decoder_unchanged() -> None:
    model = Transformer(TransformerConfig(vocab_size=40, d_model=32, n_layers=2, n_heads=4, n_ctx=64, seed=5,
                                          pos_encoding="rope", n_kv_heads=2)).eval()
    results = []
    for last in (7, 30):
        _, trace = model.run_with_trace(torch.tensor([[3, 9, 1, 22, 5, last]]))
        results.append(linear_attention_for_head(model, trace, 1, 3))
    a, b = results
    for name in ("linear_output", "softmax_output", "linear_weights", "softmax_weights"):
        x, y = getattr(a, name), getattr(b, name)
        assert torch.allclose(x[:5], y[:5], atol=1e-6, rtol=0), name
        assert not torch.allclose(x[5:], y[5:], atol=1e-6, rtol=0), name


# ---------------------------------------------------------------- what it measures


def test_entropy_and_max_of_known_rows() -> None:
    w = torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25], [0.5, 0.25, 0.25, 0.0]])
    entropy = row_entropy(w)
    assert entropy.tolist() == pytest.approx([0.0, math.log(4), 1.5 * math.log(2)], abs=1e-12)
    assert w.amax(dim=-1).tolist() == [1.0, 0.25, 0.5]


def test_cosine_and_relative_error() -> None:
    a = torch.tensor([[1.0, 0.0], [3.0, 4.0], [1.0, 1.0]])
    b = torch.tensor([[0.0, 2.0], [6.0, 8.0], [-1.0, -1.0]])
    cosine, relative = cosine_and_relative_error(a, b)
    assert cosine.tolist() == pytest.approx([0.0, 1.0, -1.0], abs=1e-12)
    assert relative.tolist() == pytest.approx([math.sqrt(5), 1.0, 2.0], abs=1e-12)


@pytest.mark.parametrize("d", [1, 8, 32, 64, 128])
def test_memory_is_the_formulas_and_the_crossover_is_where_the_cache_outgrows_the_state(d: int) -> None:
    m = memory(d, d, 10)
    assert m.state == d * d + d and m.kv_cache == 2 * 10 * d
    assert memory(d, d, m.crossover).kv_cache > m.state >= memory(d, d, m.crossover - 1).kv_cache


# ---------------------------------------------------------------- the model's own heads

@pytest.mark.parametrize("name", list(HEAD_MODELS))
def test_the_softmax_part_is_the_models_own_head(name: str) -> None:
    model = head_model(name)
    tokens = torch.randint(0, 40, (1, 17), generator=torch.Generator().manual_seed(1))
    _, trace = model.run_with_trace(tokens)
    for layer in range(2):
        for head in range(4):
            r = linear_attention_for_head(model, trace, layer, head)
            assert r.max_diff_z <= TOL and r.max_diff_pattern <= TOL and r.max_diff_forms <= TOL
            assert r.head.causal == (model.cfg.architecture == "decoder")
            assert r.linear_weights.shape == r.softmax_weights.shape == (17, 17)
            torch.testing.assert_close(r.linear_weights.sum(-1), torch.ones(17, dtype=torch.float64))


def test_the_shipped_model_and_what_the_positive_kernel_loses(tiny_gpt: Any) -> None:
    model = tiny_gpt.model  # RoPE (q, k after rotation), GQA
    ids = [t.id for t in tiny_gpt.tokenizer.encode("我爱北京天安门广场。")]
    _, trace = model.run_with_trace(torch.tensor([ids]))
    r = linear_attention_for_head(model, trace, 1, 0)  # its previous-token head
    assert r.max_diff_z <= TOL and r.max_diff_pattern <= TOL and r.max_diff_forms <= TOL
    # the trained softmax rows are sharp; the elu + 1 kernel's rows on the same q, k are flatter
    assert float(r.softmax_max[1:].mean()) > float(r.linear_max[1:].mean())
    assert float(r.softmax_entropy.mean()) < float(r.linear_entropy.mean())
    assert r.memory.d_k == model.cfg.d_head and r.memory.n == len(ids)


def test_encoder_decoder_stacks_and_cross_attention(translator: Any) -> None:
    model = translator.model
    source, target = torch.tensor([[4, 5, 6, 7, 8]]), torch.tensor([[1, 9, 10]])
    _, trace = model.run_with_trace(source, target_tokens=target)
    for stack, cross, shape in (("encoder", False, (5, 5)), ("decoder", False, (3, 3)), ("decoder", True, (3, 5))):
        r = linear_attention_for_head(model, trace, 0, 1, stack=stack, cross=cross)
        assert r.linear_weights.shape == shape
        assert r.max_diff_z <= TOL and r.max_diff_pattern <= TOL and r.max_diff_forms <= TOL
        assert r.head.causal == (stack == "decoder" and not cross)
