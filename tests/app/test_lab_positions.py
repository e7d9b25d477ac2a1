"""POST /api/lab/positions: RoPE's offsets, and learned positions refused past n_ctx."""

from __future__ import annotations

from fastapi.testclient import TestClient

from app.tensors import decode_tensor
from tests.app.conftest import error_of, post


def test_positions_rope_offsets_and_learned_context(client: TestClient) -> None:
    out = post(client, "/api/lab/positions", {"length": 48, "d_model": 64, "n_heads": 1}).json()
    assert out["rope"]["max_spread"] < 1e-5
    scores = decode_tensor(out["rope"]["scores"])
    assert scores.shape == (48, 48) and abs(scores[5, 2] - scores[40, 37]) < 1e-3  # equal offsets (4 digits shown)
    sim = out["sinusoidal"]["by_distance"]
    assert sim[0] == 32.0 and sim[0] > sim[1] > sim[3]
    status, code, message = error_of(post(client, "/api/lab/positions", {"model": "bert", "length": 65}))
    assert (status, code) == (422, "beyond_context") and "n_ctx = 64" in message and "learned" in message
    fine = post(client, "/api/lab/positions", {"model": "bert", "length": 64}).json()
    assert fine["learned"]["table"]["shape"] == [64, 32] and not fine["beyond_context"]
    past = post(client, "/api/lab/positions", {"model": "gpt", "length": 80}).json()  # RoPE: a formula, runs on
    assert past["beyond_context"] and past["n_ctx"] == 64 and past["rope"]["max_spread"] < 1e-5
    status, code, message = error_of(post(client, "/api/lab/positions", {"d_model": 64, "n_heads": 4, "pair": 8}))
    assert (status, code) == (422, "invalid_option") and "`pair`" in message
