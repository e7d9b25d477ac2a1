"""The n-gram yardstick: a proper distribution, and the figures docs/MODELS.md quotes, re-measured."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from training.ngram import KneserNey, held_out_bits

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"


@pytest.mark.parametrize("order", [1, 2, 3, 5])
def test_every_context_gets_a_distribution_that_sums_to_one(order: int) -> None:
    text = "the cat sat on the mat; 我爱北京天安门，北京的天安门。the end"
    alphabet = set(text) | set("xyz字")  # characters never seen in training still get their share
    model = KneserNey(text, order, alphabet)
    rng = random.Random(0)
    contexts = ["", "the", "北京", "q字", "t", *("".join(rng.choice(text) for _ in range(4)) for _ in range(20))]
    for context in contexts:
        total = sum(model.probability(context, char) for char in alphabet)
        assert total == pytest.approx(1.0, abs=1e-12), context
    assert model.probability("the c", "a") > model.probability("the c", "z")  # it does read its context


@pytest.mark.skipif(not CORPUS.is_dir(), reason="needs ../shared/corpus")
def test_the_readme_figures() -> None:
    """docs/MODELS.md, "A classical yardstick": held-out bits per character of Kneser-Ney 3- and 5-grams."""
    expected = {3: {"en": 2.774, "zh": 6.499}, 5: {"en": 1.913, "zh": 6.552}}
    for order, figures in expected.items():
        measured = held_out_bits([CORPUS], order)
        for lang, bits in figures.items():
            assert measured[lang] == pytest.approx(bits, abs=0.0015), (order, lang)
