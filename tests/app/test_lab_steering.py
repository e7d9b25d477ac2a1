"""POST /api/lab/steering: α = 0 answers the plain continuation, the numbers are the lab's, and every bad request
(encoders, encoder-decoders, a layer or step count out of bounds, too much work, a one-token prompt) is a 422."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.app.conftest import error_of, post

BODY: dict[str, object] = {"model": "gpt", "text": "the cat", "a": ["le chat noir", "la maison"],
                           "b": ["the black cat", "the house"], "layer": 1, "alpha": 4.0, "max_new_tokens": 6}
INLINE = {"architecture": "decoder", "d_model": 32, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2,
          "pos_encoding": "rope", "seed": 3}


def test_alpha_zero_is_the_plain_continuation(client: TestClient) -> None:
    zero = post(client, "/api/lab/steering", {**BODY, "alpha": 0.0}).json()
    assert zero["steered"] == zero["plain"] and len(zero["plain"]["ids"]) == 6
    assert all(t["before"] == t["after"] for t in zero["moved"])
    greedy = post(client, "/api/lab/cached-decoding", {"model": "gpt", "text": "the cat", "max_new_tokens": 6}).json()
    assert zero["plain"]["ids"] == [step["id"] for step in greedy["steps"]]  # the one loop, greedy
    out = post(client, "/api/lab/steering", BODY).json()
    assert out["plain"] == zero["plain"] and out["forwards"] == 2 + 2 + 2 * 6
    assert out["vector_norm"] > 0 and out["typical_norm"] > 0 and out["layer"] == 1 and out["alpha"] == 4.0
    assert 0 < sum(t["after"] for t in out["moved"]) <= 1 + 1e-6
    first = max(out["moved"], key=lambda t: t["after"])
    assert first["id"] == out["steered"]["ids"][0]  # greedy: the first token is the steered distribution's top


def test_an_inline_gqa_rope_model(client: TestClient) -> None:
    body = {**BODY, "model": None, "config": INLINE, "alpha": 0.0}
    zero = post(client, "/api/lab/steering", body).json()
    assert zero["steered"] == zero["plain"]
    out = post(client, "/api/lab/steering", {**body, "alpha": 50.0}).json()
    assert out["plain"] == zero["plain"] and out["moved"] != zero["moved"]


def test_bad_requests_are_clear(client: TestClient) -> None:
    def refused(**changes: object) -> tuple[int, str, str]:
        return error_of(post(client, "/api/lab/steering", {**BODY, **changes}))

    assert refused(model="bert")[:2] == (422, "not_generative")
    status, code, message = refused(model="translator")
    assert (status, code) == (422, "not_in_model") and "encoder-decoder" in message
    status, code, message = refused(layer=2)
    assert (status, code) == (422, "out_of_range") and "Layer 2" in message
    status, _, message = refused(max_new_tokens=33)
    assert status == 422 and "max_new_tokens" in message and "32" in message
    status, code, message = refused(a=["le chat"] * 8, b=["the cat"] * 8, max_new_tokens=32)
    assert (status, code) == (422, "too_much_work") and "80" in message and "64" in message
    assert refused(a=[])[0] == 422 and refused(b=["x"] * 9)[0] == 422
    status, code, message = refused(model=None, config=INLINE, b=["the cat", "x"])  # bytes, no start token
    assert (status, code) == (422, "text_too_short") and "prompt 2 of set B" in message
    assert refused(a=["   "])[:2] == (422, "empty_text")
    assert refused(a=["x" * 301])[:2] == (422, "text_too_long")
