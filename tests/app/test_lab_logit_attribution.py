"""POST /api/lab/logit-attribution: a next-token logit split into its parts, through the API, and its refusals."""

from __future__ import annotations

import numpy as np
from fastapi.testclient import TestClient

from tests.app.conftest import error_of, post, trace_logits

TEXT = "the cat sat on the"
PATH = "/api/lab/logit-attribution"


def test_the_parts_add_up_to_the_models_own_logit(client: TestClient) -> None:
    out = post(client, PATH, {"model": "gpt", "text": TEXT}).json()
    logits = trace_logits(client, {"model": "gpt", "text": TEXT})  # [pos, d_vocab]
    n = len(out["tokens"])
    assert out["position"] == n - 1 and out["versus"] is None
    assert out["target"]["id"] == int(logits[-1].argmax())  # default: the top next token
    assert abs(out["logit"] - logits[-1, out["target"]["id"]]) <= 1e-5
    heads, ffn = np.array(out["heads"]), np.array(out["ffn"])
    assert heads.shape == (2, 4) and ffn.shape == (2,)
    assert out["attn_bias"] is None and out["ffn_bias"] is None and out["final_norm_bias"] is None  # bias=False
    assert set(out["embedding"]) == {"token"} and out["norm"] == "rmsnorm" and out["norm_scale"] > 0  # RoPE: no table
    parts = heads.sum() + ffn.sum() + sum(out["embedding"].values())
    assert abs(parts - out["logit"]) <= 1e-4 and out["max_abs_diff"] <= 1e-4
    np.testing.assert_allclose(out["layers"], heads.sum(-1) + ffn, atol=1e-5)
    running = out["embedding"]["token"] + np.concatenate([[0], np.cumsum(out["layers"])])
    np.testing.assert_allclose(out["running"], running, atol=1e-5)
    assert len(out["top_heads"]) == 3
    magnitudes = [abs(t["contribution"]) for t in out["top_heads"]]
    assert magnitudes == sorted(magnitudes, reverse=True) and magnitudes[0] == np.abs(heads).max()
    for top in out["top_heads"]:
        assert len(top["sources"]) == n and abs(sum(top["sources"]) - top["contribution"]) <= 1e-5
        assert abs(heads[top["layer"], top["head"]] - top["contribution"]) <= 1e-6


def test_target_versus_and_position(client: TestClient) -> None:
    logits = trace_logits(client, {"model": "gpt", "text": TEXT})
    body = {"model": "gpt", "text": TEXT, "target": "t", "versus": "a", "position": 2, "top": 2}
    out = post(client, PATH, body).json()
    alone = post(client, PATH, {**body, "versus": None}).json()
    other = post(client, PATH, {**body, "target": "a", "versus": None}).json()
    t, a = out["target"]["id"], out["versus"]["id"]
    assert (out["target"]["text"], out["versus"]["text"], out["position"]) == ("t", "a", 2)
    assert abs(out["logit"] - (logits[2, t] - logits[2, a])) <= 1e-5 and out["max_abs_diff"] <= 1e-4
    np.testing.assert_allclose(out["heads"], np.array(alone["heads"]) - np.array(other["heads"]), atol=2e-6)
    np.testing.assert_allclose(out["ffn"], np.array(alone["ffn"]) - np.array(other["ffn"]), atol=2e-6)
    assert len(out["top_heads"]) == 2 and all(len(x["sources"]) == len(out["tokens"]) for x in out["top_heads"])


def test_refusals_are_clear(client: TestClient) -> None:
    status, code, message = error_of(post(client, PATH, {"model": "gpt", "text": TEXT, "target": "cat"}))
    assert (status, code) == (422, "invalid_option") and "3 tokens" in message and "exactly one token" in message
    status, code, message = error_of(post(client, PATH, {"model": "gpt", "text": TEXT, "target": "t", "versus": "t"}))
    assert (status, code) == (422, "invalid_option") and "same token" in message
    status, code, message = error_of(post(client, PATH, {"model": "gpt", "text": TEXT, "position": 40}))
    assert (status, code) == (422, "out_of_range") and "Position 40" in message
    status, code, message = error_of(post(client, PATH, {"model": "bert", "text": TEXT}))
    assert (status, code) == (422, "not_generative") and "encoder" in message
    status, code, message = error_of(post(client, PATH, {"model": "translator", "text": "12", "target_text": "a"}))
    assert (status, code) == (422, "not_in_model") and "cross-attention" in message


def test_a_post_norm_decoder_is_refused_by_name(client: TestClient) -> None:
    config = {"architecture": "decoder", "d_model": 16, "n_layers": 1, "n_heads": 2, "norm_placement": "post"}
    status, code, message = error_of(post(client, PATH, {"config": config, "text": "abc"}))
    assert (status, code) == (422, "not_in_model") and "Post-LN" in message and "no longer add up" in message
