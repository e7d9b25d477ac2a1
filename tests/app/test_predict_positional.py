"""POST /api/predict and GET /api/positional-encoding."""

from __future__ import annotations

import math

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.tensors import decode_tensor
from tests.app.conftest import error_of, post


def test_predict_distribution_and_seeded_sampling(client: TestClient) -> None:
    request = {"model": "gpt", "text": "the cat", "top_k": 5, "temperature": 0.8, "seed": 3, "max_new_tokens": 6}
    body = post(client, "/api/predict", request).json()
    probs = [row["prob"] for row in body["top_k"]]
    assert len(probs) == 5 and probs == sorted(probs, reverse=True)
    assert math.isclose(sum(probs) + body["rest_prob"], 1.0, abs_tol=1e-4)
    generated = body["generated"]
    assert generated["seed"] == 3 and len(generated["tokens"]) <= 6
    assert post(client, "/api/predict", request).json()["generated"] == generated  # same seed, same text
    top1 = post(client, "/api/predict", {**request, "sample_top_k": 1, "max_new_tokens": 1}).json()
    if top1["generated"]["tokens"]:  # top-1 sampling is greedy (unless it hit the end token)
        assert top1["generated"]["tokens"][0]["id"] == body["top_k"][0]["id"]


def test_predict_full_vocabulary_sums_to_one(client: TestClient) -> None:
    body = post(client, "/api/predict", {"model": "gpt", "text": "x", "top_k": 100, "max_new_tokens": 0}).json()
    assert body["generated"]["text"] == ""
    assert math.isclose(sum(r["prob"] for r in body["top_k"]) + body["rest_prob"], 1.0, abs_tol=1e-4)


def test_predict_encoder_decoder_continues_the_target(client: TestClient) -> None:
    body = post(client, "/api/predict", {"model": "translator", "text": "abc", "target_text": "x", "seed": 1}).json()
    assert [t["text"] for t in body["target_tokens"]] == ["<s>", "x"]
    assert math.isclose(sum(r["prob"] for r in body["top_k"]) + body["rest_prob"], 1.0, abs_tol=1e-4)


def test_predict_encoder_only_is_422(client: TestClient) -> None:
    status, code, message = error_of(post(client, "/api/predict", {"model": "bert", "text": "abc"}))
    assert (status, code) == (422, "not_generative") and "encoder" in message


def test_sinusoidal_table(client: TestClient) -> None:
    body = client.get("/api/positional-encoding", params={"kind": "sinusoidal", "length": 10, "d_model": 16}).json()
    table = decode_tensor(body["tensors"]["table"])
    assert table.shape == (10, 16)
    np.testing.assert_allclose(table[3, 0], math.sin(3), rtol=1e-3)
    np.testing.assert_allclose(table[3, 1], math.cos(3), rtol=1e-3)


def test_rope_angles_and_rotation(client: TestClient) -> None:
    body = client.get("/api/positional-encoding", params={"kind": "rope", "length": 5, "d_model": 16,
                                                          "n_heads": 2, "base": 100}).json()
    angles = decode_tensor(body["tensors"]["angles"])
    assert body["d_head"] == 8 and angles.shape == (5, 4)
    np.testing.assert_allclose(angles[2, 1], 2 * 100 ** (-2 / 8), rtol=1e-3)
    rotated = decode_tensor(body["tensors"]["rotated"])
    np.testing.assert_allclose(np.linalg.norm(rotated, axis=-1), math.sqrt(8), rtol=1e-3)  # rotations keep length


def test_alibi_and_model_defaults(client: TestClient) -> None:
    body = client.get("/api/positional-encoding", params={"kind": "alibi", "length": 4, "n_heads": 8}).json()
    bias = decode_tensor(body["tensors"]["bias"])
    assert bias.shape == (8, 4, 4) and bias[0, 3, 0] == pytest.approx(-3 * 2 ** -1, rel=1e-3)
    gpt = client.get("/api/positional-encoding", params={"model": "gpt", "length": 6}).json()
    assert gpt["kind"] == "rope" and gpt["d_head"] == 8 and gpt["model"] == "gpt"
    learned = client.get("/api/positional-encoding", params={"model": "bert", "kind": "learned", "length": 3}).json()
    assert learned["tensors"]["table"]["shape"] == [3, 32]


@pytest.mark.parametrize("params", [{"kind": "learned"}, {"kind": "learned", "model": "gpt"},
                                    {"kind": "rope", "d_model": 12, "n_heads": 4},
                                    {"kind": "sinusoidal", "d_model": 7},
                                    {"kind": "alibi", "d_model": 10, "n_heads": 3},
                                    {"kind": "fourier"}, {"length": 0}, {"length": 100000}])
def test_positional_bad_queries_are_422(client: TestClient, params: dict[str, object]) -> None:
    status, code, _ = error_of(client.get("/api/positional-encoding", params=params))
    assert status == 422 and code in ("invalid_request", "conflicting_fields", "not_in_model")


def test_positional_unknown_model_is_404(client: TestClient) -> None:
    assert error_of(client.get("/api/positional-encoding", params={"model": "nope"}))[:2] == (404, "unknown_model")
