"""lab/recurrence.py and model/recurrent.py: the step-by-step loop is the fused GRU, the influence is the true
Jacobian norm (finite differences), and on the shipped model it fades with distance."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from checkpoints import load_checkpoint
from checkpoints.recurrent import load_recurrent
from lab.recurrence import (
    MAX_TOKENS,
    jacobian_norms,
    recurrence,
    rnn_last_state,
    same_tokens,
    transformer_last_state,
)
from model.config import TransformerConfig
from model.recurrent import RecurrentConfig, RecurrentLM
from model.transformer import Transformer

WEIGHTS = Path(__file__).resolve().parents[2] / "model" / "weights"
SENTENCE = "The animal didn't cross the street because it was too tired."
LONG = ("Emma Woodhouse, handsome, clever, and rich, with a comfortable home and happy disposition, seemed to unite "
        "some of the best blessings of existence; and had lived nearly twenty-one years")  # 42 tokens


def far_over_near(influence: torch.Tensor) -> float:
    """The mean influence over the farthest third of the text (the start token left out) over the influence one
    token back (the panel's comparison)."""
    n = len(influence)
    k = max(1, (n - 1) // 3)
    return float(influence[1 : k + 1].mean() / influence[n - 2])


def tiny_rnn(dtype: torch.dtype = torch.float32) -> RecurrentLM:
    rnn = RecurrentLM(RecurrentConfig(vocab_size=17, d_embed=5, d_hidden=7, seed=3)).to(dtype).eval()
    with torch.no_grad():  # biases away from nn.GRU's small default init, so every term of the step counts
        for p in rnn.gru.parameters():
            p.mul_(3.0)
    return rnn


def test_the_step_by_step_loop_is_the_fused_gru() -> None:
    rnn = tiny_rnn()
    tokens = torch.randint(0, 17, (3, 12), generator=torch.Generator().manual_seed(0))
    x = rnn.embed(tokens)  # [batch, pos, d_embed]
    with torch.no_grad():
        fused, _ = rnn.gru(x)
        looped = rnn.steps(x)
    assert looped.shape == fused.shape == (3, 12, 7)
    assert (looped - fused).abs().max() <= 1e-5
    assert fused.abs().max() > 0.1  # not a trivially small state


def test_the_shipped_loop_is_the_shipped_fused_gru() -> None:
    shipped = load_recurrent()
    ids = [t.id for t in shipped.tokenizer.encode(SENTENCE)]
    with torch.no_grad():
        x = shipped.model.embed(torch.tensor([ids]))
        fused, _ = shipped.model.gru(x)
        assert (shipped.model.steps(x) - fused).abs().max() <= 1e-5
        assert torch.allclose(shipped.model.unembed(fused), shipped.model(torch.tensor([ids])), atol=1e-5)


def finite_difference_norms(f: object, x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """‖∂f/∂x_i‖_F by central differences, one input coordinate at a time (float64)."""
    assert callable(f)
    pos, d_in = x.shape
    squares = torch.zeros(pos, dtype=torch.float64)
    for i in range(pos):
        for e in range(d_in):
            up, down = x.clone(), x.clone()
            up[i, e] += eps
            down[i, e] -= eps
            column = (f(up[None]) - f(down[None]))[0] / (2 * eps)  # [d_out]
            squares[i] += column.pow(2).sum()
    return squares.sqrt()


def test_the_recurrent_influence_is_the_jacobian_norm() -> None:
    rnn = tiny_rnn(torch.float64)
    x = torch.randn(5, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = finite_difference_norms(rnn_last_state(rnn), x)
    got = jacobian_norms(x, rnn_last_state(rnn), 7)
    assert torch.allclose(got.double(), expected, rtol=1e-6, atol=1e-9)
    assert expected.min() > 0


def test_the_transformer_influence_is_the_jacobian_norm() -> None:
    cfg = TransformerConfig(vocab_size=20, d_model=8, n_layers=2, n_heads=2, d_mlp=16, n_ctx=16, seed=2,
                            init_std=0.3, pos_encoding="rope", norm="rmsnorm")
    model = Transformer(cfg).double().eval()
    tokens = torch.tensor([3, 7, 1, 9, 4])
    x = torch.randn(5, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    last = transformer_last_state(model, tokens)
    with torch.no_grad():
        expected = finite_difference_norms(last, x)
    got = jacobian_norms(x, last, 8)
    assert torch.allclose(got.double(), expected, rtol=1e-6, atol=1e-9)
    assert expected.min() > 0


@pytest.fixture(scope="module")
def measured() -> object:
    shipped = load_recurrent()
    transformer = load_checkpoint(WEIGHTS / "pe-rope").model.eval()
    ids = [shipped.tokenizer.token_id("<|endoftext|>")] + [t.id for t in shipped.tokenizer.encode(LONG)]
    return recurrence(shipped.model, transformer, ids), len(ids)


def test_on_the_shipped_models_the_recurrent_influence_fades_with_distance(measured: tuple) -> None:
    result, n = measured
    rnn, attention = result.rnn_influence, result.transformer_influence
    assert rnn.shape == attention.shape == (n,) and n == 42
    # measured on this sentence: the GRU keeps 0.7% of its one-token-back influence over the far third (27-40
    # tokens back), pe-rope 11%
    assert far_over_near(rnn) < 0.02
    assert far_over_near(attention) > 0.05
    assert far_over_near(rnn) < far_over_near(attention) / 5
    # the GRU's curve falls over its first ten steps back, nearly everywhere
    near = rnn.flip(0)[1:12]  # distance 1..11
    assert (near[1:] < near[:-1]).float().mean() >= 0.7


def test_on_the_shipped_models_the_steps_and_losses_are_counted(measured: tuple) -> None:
    result, n = measured
    assert len(result.rnn_step_seconds) == n and len(result.transformer_block_seconds) == 2
    assert all(s > 0 for s in result.rnn_step_seconds + result.transformer_block_seconds)
    assert result.rnn_loss.shape == result.transformer_loss.shape == (n - 1,)
    uniform = torch.log(torch.tensor(7071.0))
    assert result.rnn_loss.mean() < uniform and result.transformer_loss.mean() < uniform  # both learned something


def test_the_recurrent_model_reads_the_tiny_models_tokens_and_no_others() -> None:
    shipped = load_recurrent()
    assert same_tokens(shipped.tokenizer, load_checkpoint(WEIGHTS / "tiny-gpt").tokenizer)
    assert not same_tokens(shipped.tokenizer, load_checkpoint(WEIGHTS / "tiny-translator").tokenizer)


def test_over_long_or_single_token_input_is_refused() -> None:
    rnn, model = tiny_rnn(), Transformer(TransformerConfig(vocab_size=17, d_model=8, n_layers=1, n_heads=2,
                                                           d_mlp=16, n_ctx=128))
    with pytest.raises(ValueError, match=f"2 to {MAX_TOKENS} tokens"):
        recurrence(rnn, model, [1] * (MAX_TOKENS + 1))
    with pytest.raises(ValueError, match=f"2 to {MAX_TOKENS} tokens"):
        recurrence(rnn, model, [1])
