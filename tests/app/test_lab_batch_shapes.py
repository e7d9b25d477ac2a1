"""POST /api/lab/batch-shapes: the sizes of the model's own reshapes on a padded batch of two, the same numbers at
each view and transpose, refusals that name the option."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.app.conftest import error_of, post

BODY = {"text": "the cat sat on the mat", "other": "hello", "layer": 1}


@pytest.mark.parametrize(("model", "head", "kv_heads"), [("gpt", 3, 2), ("bert", 1, 2)])
def test_batch_shapes_walks_the_models_reshapes(client: TestClient, model: str, head: int, kv_heads: int) -> None:
    out = post(client, "/api/lab/batch-shapes", {**BODY, "model": model, "head": head, "sentence": 2}).json()
    n1, n2 = len(out["sentences"][0]), len(out["sentences"][1])
    assert out["width"] == max(n1, n2) and out["pos"] == n2 - 1  # omitted: the followed sentence's last token
    assert out["kv_heads"] == kv_heads and out["kv_head"] == head // (out["n_heads"] // kv_heads)
    shapes = {s["name"]: s["shape"] for s in out["steps"]}
    width, heads, d_head = out["width"], out["n_heads"], out["d_head"]
    assert shapes["q_flat"] == [2, width, heads * d_head] and shapes["q_view"] == [2, width, heads, d_head]
    assert shapes["q_t"] == [2, heads, width, d_head] and shapes["k_t"] == [2, kv_heads, width, d_head]
    assert shapes["scores"] == shapes["pattern"] == [2, heads, width, width] and shapes["out"] == [2, width, 32]
    for before, step in zip(out["steps"], out["steps"][1:], strict=False):
        if step["reshape"]:
            assert step["values"] == pytest.approx(before["values"], abs=1e-7)
    assert max(out["model_diffs"].values()) < 1e-5 and out["pad_key_weight"] == 0
    assert len(out["pattern"]) == width and all(len(row) == width for row in out["pattern"])


def test_batch_shapes_refusals_name_the_option(client: TestClient) -> None:
    status, code, message = error_of(post(client, "/api/lab/batch-shapes", {**BODY, "model": "gpt", "pos": 40}))
    assert (status, code) == (422, "invalid_option") and "`pos`" in message and "padding" in message
    status, code, message = error_of(post(client, "/api/lab/batch-shapes", {**BODY, "model": "gpt", "head": 4}))
    assert status == 422 and "4" in message
    status, code, _ = error_of(post(client, "/api/lab/batch-shapes", {**BODY, "model": "translator"}))
    assert (status, code) == (422, "not_in_model")
    status, code, message = error_of(post(client, "/api/lab/batch-shapes", {**BODY, "model": "gpt", "other": ""}))
    assert (status, code) == (422, "empty_text") and "other" in message
