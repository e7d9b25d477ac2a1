"""POST /api/lab/recurrence: the GRU beside a Transformer that reads the same tokens; the losses are the models' own,
over-long input is a 422 naming the limit, and a model with other tokens is refused by name."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.factory import create_app
from app.registry import Registry
from checkpoints import load_checkpoint
from tests.app.conftest import error_of, make_settings, post, tiny_models, trace_logits

ROUTE = "/api/lab/recurrence"
WEIGHTS = Path(__file__).resolve().parents[2] / "model" / "weights"
SENTENCE = "The animal didn't cross the street because it was too tired."


@pytest.fixture(scope="module")
def pe_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    registry = Registry(default="pe-rope")
    registry.add("pe-rope", load_checkpoint(WEIGHTS / "pe-rope"), source="test")
    for name, loaded in tiny_models().items():
        registry.add(name, loaded, source="test")
    settings = make_settings(tmp_path_factory.mktemp("recurrence"), default_model="pe-rope", max_tokens=128)
    with TestClient(create_app(settings, registry)) as client:
        yield client


def test_the_answer_measures_both_models_on_the_same_tokens(pe_client: TestClient) -> None:
    body = {"model": "pe-rope", "text": SENTENCE}
    response = post(pe_client, ROUTE, body)
    assert response.status_code == 200, response.text[:300]
    out = response.json()
    n = len(out["tokens"])
    assert out["steps"]["recurrent_steps"] == n and out["steps"]["transformer_passes"] == 2
    assert len(out["steps"]["recurrent_step_ms"]) == n and len(out["steps"]["transformer_block_ms"]) == 2
    assert out["influence"]["distance"] == list(range(n - 1, -1, -1))
    rnn, transformer = out["influence"]["recurrent"], out["influence"]["transformer"]
    assert rnn[0] < 1e-2 * rnn[-2] and transformer[0] > 1e-1 * transformer[-2]  # fades for the GRU only
    # the Transformer's losses are its own logits' (the explorer's trace of the same text)
    logits = trace_logits(pe_client, body)
    ids = [t["id"] for t in out["tokens"]]
    logp = logits - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1, keepdims=True)) - logits.max(
        -1, keepdims=True)
    expected = [-logp[i, ids[i + 1]] for i in range(n - 1)]
    assert np.allclose(out["loss"]["transformer"], expected, atol=1e-3)
    assert out["loss"]["uniform"] == pytest.approx(math.log(7071), abs=1e-4)
    assert out["loss"]["recurrent_mean"] < out["loss"]["uniform"]
    assert out["recurrent"]["parameters"] > 0 and out["recurrent"]["tokens_seen"] > 0
    assert out["transformer"]["name"] == "pe-rope" and out["max_tokens"] == 64


def test_over_long_input_is_refused_naming_the_limit(pe_client: TestClient) -> None:
    response = post(pe_client, ROUTE, {"model": "pe-rope", "text": "the cat sat on the mat. " * 12})
    status, code, message = error_of(response)
    assert (status, code) == (422, "text_too_long")
    assert "the limit is 64 tokens" in message


def test_a_model_with_other_tokens_or_another_family_is_refused(pe_client: TestClient) -> None:
    status, code, message = error_of(post(pe_client, ROUTE, {"model": "gpt", "text": "the cat"}))
    assert (status, code) == (422, "invalid_option") and "other tokens" in message and "'gpt'" in message
    for model in ("bert", "translator"):
        status, code, message = error_of(post(pe_client, ROUTE, {"model": model, "text": "the cat"}))
        assert (status, code) == (422, "not_in_model") and "decoder-only" in message
