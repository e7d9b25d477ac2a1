"""POST /api/lab/embedding-persistence: the cosines are the trace's own, one stack at a time, and bad input is a 422."""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient

from tests.app.conftest import decode_tensor, error_of, post

ROUTE = "/api/lab/embedding-persistence"


def stages(client: TestClient, body: dict[str, object], names: list[str]) -> dict[str, np.ndarray]:
    """Stages of /api/trace at full float32 precision: [pos, d_model]."""
    response = post(client, "/api/trace", {**body, "stages": names, "encoding": "base64"})
    assert response.status_code == 200, response.text[:300]
    out = response.json()
    return {name: decode_tensor(out["stages"][name]).astype(np.float64) for name in names}


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:  # [pos]
    return (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


@pytest.mark.parametrize(("body", "prefix", "layers"), [
    ({"model": "gpt", "text": "the cat sat on"}, "", 2),
    ({"model": "bert", "text": "the cat sat on"}, "", 2),
    ({"model": "translator", "text": "hi there", "target_text": "ab"}, "encoder.", 2),
    ({"model": "translator", "text": "hi there", "target_text": "ab", "stack": "decoder"}, "decoder.", 1),
], ids=["decoder", "encoder", "encoder-decoder's encoder", "encoder-decoder's decoder"])
def test_the_cosines_are_the_traces_own(client: TestClient, body: dict[str, object], prefix: str,
                                        layers: int) -> None:
    out = post(client, ROUTE, body).json()
    trace_body = {k: v for k, v in body.items() if k != "stack"}
    names = ([f"{prefix}hook_embed", f"{prefix}blocks.0.hook_resid_pre"]
             + [f"{prefix}blocks.{L}.hook_resid_post" for L in range(layers)])
    got = stages(client, trace_body, names)
    embed, streams = got[names[0]], [got[n] for n in names[1:]]
    assert out["streams"] == ["input"] + [str(L) for L in range(layers)]
    assert len(out["tokens"]) == len(embed)
    for row, stream in enumerate(streams):
        assert np.abs(np.array(out["to_embedding"][row]) - cosines(stream, embed)).max() <= 1e-5
        assert np.abs(np.array(out["to_final"][row]) - cosines(stream, streams[-1])).max() <= 1e-5
        ratio = np.linalg.norm(stream, axis=-1) / np.linalg.norm(embed, axis=-1)
        assert abs(out["mean_norm_ratio"][row] - ratio.mean()) <= 1e-3 * ratio.mean()
    assert np.allclose(out["mean_to_embedding"], np.mean(out["to_embedding"], axis=-1), atol=1e-5)
    assert np.allclose(out["to_final"][-1], 1, atol=1e-5)
    assert all(-1 <= x <= 1 for row in out["to_embedding"] + out["to_final"] for x in row)


def test_what_is_added_before_block_0_is_named(client: TestClient) -> None:
    gpt = post(client, ROUTE, {"model": "gpt", "text": "the cat"}).json()  # RoPE: nothing added
    assert gpt["added"] == [] and gpt["stack"] is None
    assert np.allclose(gpt["to_embedding"][0], 1, atol=1e-5)  # its input is the embedding itself
    bert = post(client, ROUTE, {"model": "bert", "text": "the cat"}).json()
    assert bert["added"] == ["positions", "segments", "norm"]
    translator = post(client, ROUTE, {"model": "translator", "text": "hi"}).json()
    assert translator["added"] == ["positions"] and translator["stack"] == "encoder"


@pytest.mark.parametrize(("body", "code", "words"), [
    ({"model": "gpt", "text": "the cat", "stack": "encoder"}, "not_in_model", "single decoder stack"),
    ({"model": "gpt", "text": "the cat", "stack": "middle"}, "invalid_request", "stack"),
    ({"model": "gpt", "text": "the cat", "layer": 1}, "invalid_request", "stack, target_text, text"),
    ({"model": "gpt", "text": ""}, "empty_text", ""),
    ({"model": "nope", "text": "the cat"}, "unknown_model", "Known models"),
])
def test_bad_requests_are_422s_that_say_why(client: TestClient, body: dict[str, object], code: str,
                                            words: str) -> None:
    status, got, message = error_of(post(client, ROUTE, body))
    assert (status, got) == (404 if code == "unknown_model" else 422, code), message
    assert words in message
