"""lab/objectives.py: the causal losses are the model's own cross-entropy, later tokens never change earlier
losses, the masked positions come back from the seed, and the generation counts match a step-by-step count."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from lab import objectives
from model.config import TransformerConfig
from model.transformer import Transformer

IDS = [1, 5, 9, 2, 7, 7, 3, 8, 4, 6, 2, 11]


def make(**changes: object) -> Transformer:
    base: dict[str, object] = dict(architecture="decoder", vocab_size=16, d_model=32, n_layers=2, n_heads=4,
                                   n_ctx=32, pos_encoding="rope", seed=3, init_std=0.3)
    return Transformer(TransformerConfig(**{**base, **changes})).eval()  # type: ignore[arg-type]


@pytest.mark.parametrize("changes", [{}, {"pos_encoding": "learned", "norm": "layernorm", "n_kv_heads": 2}])
def test_the_losses_are_cross_entropy_on_the_models_own_logits(changes: dict[str, object]) -> None:
    model = make(**changes)
    with torch.no_grad():
        logits = model(torch.tensor([IDS]))[0]  # [pos, d_vocab]
    expected = F.cross_entropy(logits[:-1], torch.tensor(IDS[1:]), reduction="none")  # [pos - 1]
    losses = objectives.causal_losses_of(model, IDS)
    assert losses.shape == (len(IDS) - 1,)
    torch.testing.assert_close(losses, expected, rtol=0, atol=1e-5)
    assert float(losses.min()) > 0  # a real distribution: no token is certain
    report = objectives.objectives_report(model, logits, IDS, list(range(1, len(IDS))), seed=0)
    assert report["causal"]["signals"] == len(IDS) - 1
    assert report["causal"]["mean"] == pytest.approx(float(F.cross_entropy(logits[:-1], torch.tensor(IDS[1:]))))


@pytest.mark.parametrize("changed", [4, 8, len(IDS) - 1])
def test_a_later_token_never_changes_an_earlier_loss(changed: int) -> None:
    model = make()
    other = list(IDS)
    other[changed] = (other[changed] + 5) % 16
    before, after = objectives.causal_losses_of(model, IDS), objectives.causal_losses_of(model, other)
    # loss i predicts token i + 1 from tokens ≤ i: token `changed` enters loss changed − 1 (as the answer) and after
    torch.testing.assert_close(before[:changed - 1], after[:changed - 1], rtol=0, atol=1e-6)
    assert (before[changed - 1:] - after[changed - 1:]).abs().max() > 1e-4
    bidirectional = make(architecture="encoder", lm_head=True)  # the same check fails without the causal mask
    ids_before, ids_after = torch.tensor([IDS]), torch.tensor([other])
    with torch.no_grad():
        a, b = bidirectional(ids_before)[0], bidirectional(ids_after)[0]
    seen_later = objectives.causal_losses(a, IDS)[:changed - 1] - objectives.causal_losses(b, other)[:changed - 1]
    assert seen_later.abs().max() > 1e-4


def test_masked_positions_are_reproducible_about_15_percent_and_at_least_one() -> None:
    candidates = list(range(1, 41))
    first = objectives.masked_positions(candidates, seed=7)
    assert first == objectives.masked_positions(candidates, seed=7)
    assert len(first) == 6 and set(first) <= set(candidates) and first == sorted(set(first))  # round(0.15 · 40)
    draws = {tuple(objectives.masked_positions(candidates, seed=s)) for s in range(20)}
    assert len(draws) > 15  # the seed chooses
    for n in range(1, 200):
        count = objectives.masked_count(n)
        assert count >= 1 and abs(count - 0.15 * n) <= 0.5 or (n * 0.15 < 0.5 and count == 1)
    assert objectives.masked_positions([1, 2], seed=0) in ([1], [2])


def test_span_corruption_counts() -> None:
    out = objectives.span_corruption(100)
    assert (out["corrupted"], out["spans"]) == (15, 5)
    assert out["input_length"] == 100 - 15 + 5 and out["target_length"] == 15 + 5
    small = objectives.span_corruption(2)
    assert (small["corrupted"], small["spans"], small["input_length"], small["target_length"]) == (1, 1, 2, 2)
    with pytest.raises(ValueError):
        objectives.span_corruption(1)


def brute_force_positions(n: int, m: int, cached: bool) -> int:
    """Run a generation loop and count the positions fed to the model."""
    sequence, cache, fed = list(range(n)), 0, 0
    for _ in range(m):
        new = sequence[cache:] if cached else sequence
        fed += len(new)
        cache = len(sequence)
        sequence.append(len(sequence))  # the token this step chose
    return fed


@pytest.mark.parametrize("n", [1, 2, 9, 40])
def test_generation_cost_matches_a_step_by_step_count(n: int) -> None:
    curve = objectives.generation_curve(n, steps=32)
    for m, cached, recomputed in zip(curve["new_tokens"], curve["cached"], curve["recomputed"], strict=True):
        assert cached == brute_force_positions(n, m, cached=True)
        assert recomputed == brute_force_positions(n, m, cached=False)
    assert curve["new_tokens"] == list(range(1, 33))


def test_the_same_compute_per_token_for_every_objective() -> None:
    model = make()
    params = objectives.non_embedding_parameters(model)
    blocks = sum(p.numel() for p in model.parameters()) - model.cfg.vocab_size * 32  # tied W_E = W_U; RoPE: no table
    assert params["non_embedding"] == blocks
    rows = {r["objective"]: r for r in objectives.signals_per_pass(12, 11, 2, params["non_embedding"])}
    assert rows["causal"]["flops"] == rows["masked"]["flops"] == 2 * params["non_embedding"] * 12
    assert rows["causal"]["signals"] == 11 and rows["masked"]["signals"] == 2
    assert rows["span"]["signals"] == objectives.span_corruption(11)["target_length"]
    assert rows["causal"]["signals_per_gflop"] == pytest.approx(11 / (2 * params["non_embedding"] * 12 / 1e9))
