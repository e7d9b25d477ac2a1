"""POST /api/lab/head-count through the API: the splits, the model's own row, and errors that name the limit."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.lab import head_count
from tests.app.conftest import error_of, post

LONG = "the cat sat on the mat and the dog sat"  # 39 tokens with the start token: more than d_k 32


def test_every_split_of_the_width_with_ranks_under_the_bound(client: TestClient) -> None:
    out = post(client, "/api/lab/head-count", {"model": "gpt", "text": LONG, "layer": 1}).json()
    n = len(out["query_tokens"])
    assert n > 32 and out["width"] == 32 and out["model_heads"] == 4 and out["kv_heads"] == 2 and out["rotated"]
    assert [s["heads"] for s in out["splits"]] == [1, 2, 4, 8, 16, 32]
    for s in out["splits"]:
        assert s["d_k"] == 32 // s["heads"] and s["bound"] == min(n, s["d_k"]) and len(s["ranks"]) == s["heads"]
        assert max(s["ranks"]) <= s["bound"] and s["min_rank"] == min(s["ranks"])
        assert 0 <= s["entropy"] <= out["uniform_entropy"] + 1e-9
    assert out["own_split_diff"] < 1e-4  # h = 4: the model's own scores again
    assert [p["name"] for p in out["published"]] == ["Llama 7B", "GPT-3 175B"]
    cross = post(client, "/api/lab/head-count", {"model": "translator", "text": "hello there", "target_text": "ab",
                                                 "cross": True}).json()
    assert cross["stack"] == "decoder" and len(cross["key_tokens"]) > len(cross["query_tokens"])
    assert all(max(s["ranks"]) <= min(len(cross["query_tokens"]), s["d_k"]) for s in cross["splits"])


def test_a_bad_layer_or_a_text_too_long_is_a_422_naming_the_limit(client: TestClient,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    status, code, message = error_of(post(client, "/api/lab/head-count", {"model": "gpt", "text": LONG, "layer": 2}))
    assert (status, code) == (422, "out_of_range") and "Layer 2" in message and "numbered 0 to 1" in message
    # the tiny models are far under the real limit: lower it (20 characters and the start token cost 60,186)
    monkeypatch.setattr(head_count, "MAX_RANK_WORK", 10_000)
    status, code, message = error_of(post(client, "/api/lab/head-count", {"model": "gpt", "text": "x" * 20}))
    assert (status, code) == (422, "too_much_work") and "`text`" in message
    assert "10,000" in message and "60,186" in message
    status, code, _ = error_of(post(client, "/api/lab/head-count", {"model": "gpt", "text": LONG, "cross": True}))
    assert (status, code) == (422, "not_in_model")
