"""POST /api/lab/recurrence: the shipped GRU beside a shipped Transformer that reads its tokens; the losses are the
models' own, the influence fades with distance for the GRU only, and over-long input is a 422 naming the limit."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from fastapi.testclient import TestClient

from checkpoints import load_checkpoint
from checkpoints.recurrent import load_recurrent
from tests.app.conftest import error_of, post

ROUTE = "/api/lab/recurrence"
WEIGHTS = Path(__file__).resolve().parents[2] / "model" / "weights"
SENTENCE = ("Emma Woodhouse, handsome, clever, and rich, with a comfortable home and happy disposition, seemed to "
            "unite some of the best blessings of existence; and had lived nearly twenty-one years")


def own_losses(model: torch.nn.Module, ids: list[int]) -> list[float]:
    with torch.no_grad():
        logits = model(torch.tensor([ids]))[0].float()  # [pos, d_vocab]
    return F.cross_entropy(logits[:-1], torch.tensor(ids[1:]), reduction="none").tolist()


@pytest.mark.parametrize(("transformer", "layers"), [("pe-rope", 2), ("tiny-gpt", 4)])
def test_both_models_are_measured_on_the_same_tokens(client: TestClient, transformer: str, layers: int) -> None:
    response = post(client, ROUTE, {"text": SENTENCE, "transformer": transformer})
    assert response.status_code == 200, response.text[:300]
    out = response.json()
    ids = [t["id"] for t in out["tokens"]]
    n = len(ids)
    assert out["tokens"][0]["text"] == "<|endoftext|>"  # the start token both were trained with
    assert out["steps"]["recurrent_steps"] == n and out["steps"]["transformer_passes"] == layers
    assert len(out["steps"]["recurrent_step_ms"]) == n and len(out["steps"]["transformer_block_ms"]) == layers
    assert out["influence"]["distance"] == list(range(n - 1, -1, -1))
    rnn, attention = out["influence"]["recurrent"], out["influence"]["transformer"]
    k = (n - 1) // 3  # the farthest third of the text against one token back (the panel's comparison)
    rnn_far, attention_far = sum(rnn[1:k + 1]) / k / rnn[-2], sum(attention[1:k + 1]) / k / attention[-2]
    assert rnn_far < 0.02 and rnn_far < attention_far / 2  # it fades far faster for the GRU
    expected = own_losses(load_checkpoint(WEIGHTS / transformer).model.eval(), ids)
    assert out["loss"]["transformer"] == pytest.approx(expected, abs=1e-3)
    assert out["loss"]["recurrent"] == pytest.approx(own_losses(load_recurrent().model, ids), abs=1e-3)
    assert out["loss"]["uniform"] == pytest.approx(math.log(7071), abs=1e-4)
    assert out["transformer"]["name"] == transformer and out["max_tokens"] == 64
    assert out["recurrent"]["tokens_seen"] > 0 and out["transformer"]["tokens_seen"] > 0


def test_over_long_input_is_refused_naming_the_limit(client: TestClient) -> None:
    status, code, message = error_of(post(client, ROUTE, {"text": "the cat sat on the mat. " * 12}))
    assert (status, code) == (422, "text_too_long") and "the limit is 64 tokens" in message
    status, code, message = error_of(post(client, ROUTE, {"text": "a" * 2001}))
    assert (status, code) == (422, "text_too_long") and "2000 characters" in message


def test_bad_input_is_a_clear_422(client: TestClient) -> None:
    assert error_of(post(client, ROUTE, {"text": ""}))[:2] == (422, "empty_text")
    status, code, message = error_of(post(client, ROUTE, {"text": "the cat", "transformer": "smollm2"}))
    assert status == 422 and "transformer" in message


def test_the_curves_words_are_read_off_the_curves(client: TestClient) -> None:
    """Teaching review 4, finding 9: the note said "decays with distance" beside a U. The answer now carries what
    each curve does (the page picks its sentence from it), and a reference curve over several sentences."""
    out = post(client, ROUTE, {"text": "The animal didn't cross the street because it was too tired."}).json()
    influence = out["influence"]
    by_distance = influence["recurrent"][::-1][1:-1]  # d = 1 … N − 2: the start token left out
    shape = influence["shape"]
    assert shape["near"] == pytest.approx(by_distance[0], rel=1e-3)
    assert shape["low"] == pytest.approx(min(by_distance), rel=1e-3)
    assert by_distance[shape["low_at"] - 1] == pytest.approx(min(by_distance), rel=1e-3)
    far = by_distance[shape["far_from"] - 1:]
    assert shape["far"] == pytest.approx(sum(far) / len(far), rel=1e-3)
    assert shape["rises"] == (shape["low_at"] < shape["far_from"] and shape["far"] >= 1.5 * shape["low"])
    assert shape["rises"]  # this sentence's curve is a U: its first words reach the last state again
    reference = influence["reference"]
    assert reference["sentences"][0] >= 8 and reference["sentences"] == sorted(reference["sentences"], reverse=True)
    assert reference["distance"] == list(range(1, len(reference["recurrent"]) + 1))
    assert reference["shape"]["low"] < reference["shape"]["near"] / 10  # averaged, the gradient does vanish
