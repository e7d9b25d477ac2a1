"""POST /api/lab/masks: the masks and the model's patterns under them, errors that name the option."""

from __future__ import annotations

import numpy as np
from fastapi.testclient import TestClient

from app.tensors import decode_tensor
from tests.app.conftest import error_of, post

TEXT = "the cat sat"


def test_masks_and_the_patterns_under_them(client: TestClient) -> None:
    out = post(client, "/api/lab/masks", {"model": "gpt", "text": TEXT, "window": 2, "layer": 1}).json()
    n = len(out["tokens"])
    masks = out["masks"]
    assert out["model_mask"] == "causal" and out["shorter"] == n // 2
    assert np.array_equal(np.array(masks["causal"]["mask"]), np.tril(np.ones((n, n))))
    assert (np.array(masks["sliding"]["mask"]).sum(-1) <= 2).all()
    causal, free = decode_tensor(masks["causal"]["pattern"]), decode_tensor(masks["bidirectional"]["pattern"])
    assert causal.shape == (4, n, n) and np.abs(np.triu(causal, 1)).max() == 0  # nothing from the future
    assert np.triu(free, 1).max() > 0.01  # without the mask the decoder looks ahead
    padded = decode_tensor(masks["padding"]["pattern"])  # [row, head, q, k]
    assert np.abs(padded[1, :, :, out["shorter"]:]).max() == 0
    assert masks["cross"]["pattern"] is None  # a decoder has no cross-attention
    translator = post(client, "/api/lab/masks", {"model": "translator", "text": "hello", "target_text": "ab"}).json()
    cross = decode_tensor(translator["masks"]["cross"]["pattern"])
    assert cross.shape[-2:] == (len(translator["target_tokens"]), 5) and translator["model_mask"] == "bidirectional"
    np.testing.assert_allclose(cross.sum(-1), 1.0, atol=2e-3)


def test_masks_errors_name_the_option(client: TestClient) -> None:
    status, code, message = error_of(post(client, "/api/lab/masks", {"model": "gpt", "text": TEXT, "shorter": 99}))
    assert (status, code) == (422, "invalid_option") and "`shorter`" in message
    status, code, _ = error_of(post(client, "/api/lab/masks", {"model": "gpt", "text": TEXT, "window": 0}))
    assert (status, code) == (422, "invalid_request")
