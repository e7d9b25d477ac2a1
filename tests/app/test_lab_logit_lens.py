"""POST /api/lab/logit-lens: the last layer's reading is the model's own logits."""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient

from tests.app.conftest import error_of, post, softmax, trace_logits

TEXT = "the cat sat on"


LENS_BODIES = [{"model": "gpt", "text": TEXT}, {"model": "translator", "text": "hi", "target_text": "ab"}]


@pytest.mark.parametrize("body", LENS_BODIES)
def test_the_logit_lens_last_layer_is_the_models_logits(client: TestClient, body: dict[str, object]) -> None:
    out = post(client, "/api/lab/logit-lens", {**body, "k": 4}).json()
    probs = softmax(trace_logits(client, body))  # [pos, d_vocab]
    assert out["max_diff_last"] <= 1e-5 and out["layers"][0] == "embed" and len(out["top"][-1]) == len(probs)
    for pos, cell in enumerate(out["top"][-1]):
        assert cell["ids"] == list(np.argsort(-probs[pos])[:4])
        assert np.abs(np.array(cell["probs"]) - probs[pos][cell["ids"]]).max() <= 1e-5
    ids = [t["id"] for t in out["tokens"]]
    following = [probs[p, ids[p + 1]] for p in range(len(ids) - 1)]
    assert np.abs(np.array(out["next_token_probs"][-1]) - following).max() <= 1e-5
    status, code, _ = error_of(post(client, "/api/lab/logit-lens", {"model": "bert", "text": TEXT}))
    assert (status, code) == (422, "not_generative")
    status, code, message = error_of(post(client, "/api/lab/logit-lens", {"model": "gpt", "text": TEXT, "k": 0}))
    assert (status, code) == (422, "invalid_request") and "'k'" in message
