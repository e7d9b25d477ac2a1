"""POST /api/lab/attention-flow: one head's weights beside what it moves, through the API, and its limits."""

from __future__ import annotations

import numpy as np
from fastapi.testclient import TestClient

from app.tensors import decode_tensor
from tests.app.conftest import error_of, post

TEXT = "the cat sat on the mat"
PATH = "/api/lab/attention-flow"


def matrix(rows: list[list[float | None]]) -> np.ndarray:
    return np.array([[np.nan if x is None else x for x in row] for row in rows], dtype=float)


def test_weights_flows_and_the_identity(client: TestClient) -> None:
    out = post(client, PATH, {"model": "gpt", "text": TEXT, "layer": 1, "head": 3}).json()
    n = len(out["tokens"])
    assert (out["layer"], out["head"], out["kv_head"], out["n_heads"]) == (1, 3, 1, 4)  # GQA: 2 query heads per K/V
    weights, norms, shares = matrix(out["weights"]), matrix(out["flow_norms"]), matrix(out["flow_shares"])
    assert weights.shape == norms.shape == shares.shape == (n, n)
    assert np.isnan(np.triu(weights, 1)[np.triu_indices(n, 1)]).all()  # the causal mask: hidden cells are None
    np.testing.assert_allclose(np.nansum(weights, -1), 1.0, atol=1e-5)
    np.testing.assert_allclose(np.nansum(shares, -1), 1.0, atol=1e-5)
    np.testing.assert_allclose(norms, weights * np.array(out["value_norms"])[None], atol=2e-6)
    assert out["identity"]["max_abs_diff"] <= 1e-5 and out["identity"]["out_bias"] is False
    assert out["rows_read"] == n and 0 <= out["rows_differ"] <= n
    assert out["rows"][0] == {"top_weight": 0, "top_flow": 0, "rank_correlation": None}
    for i, row in enumerate(out["rows"]):
        assert row["top_weight"] == int(np.nanargmax(weights[i])) and row["top_flow"] == int(np.nanargmax(norms[i]))
    assert out["rows_differ"] == sum(r["top_weight"] != r["top_flow"] for r in out["rows"])
    # the same weights as the explorer's trace of the same text
    trace = post(client, "/api/trace", {"model": "gpt", "text": TEXT, "stages": ["blocks.1.attn.hook_pattern"],
                                    "encoding": "base64"}).json()
    pattern = decode_tensor(trace["stages"]["blocks.1.attn.hook_pattern"])[3]  # [head, q_pos, k_pos]
    np.testing.assert_allclose(np.nan_to_num(weights), pattern, atol=1e-5)


def test_an_encoder_with_an_output_bias_and_an_encoder_decoder(client: TestClient) -> None:
    bert = post(client, PATH, {"model": "bert", "text": TEXT, "layer": 0, "head": 1}).json()
    assert bert["identity"]["out_bias"] is True and bert["identity"]["max_abs_diff"] <= 1e-5
    assert not np.isnan(matrix(bert["weights"])).any()  # bidirectional: every key
    decoder = post(client, PATH, {"model": "translator", "text": "hello", "target_text": "ab", "stack": "decoder",
                                  "layer": 0, "head": 2}).json()
    assert decoder["stack"] == "decoder" and len(decoder["tokens"]) == len(decoder["weights"])
    assert decoder["identity"]["max_abs_diff"] <= 1e-5


def test_a_bad_layer_or_head_names_the_limit(client: TestClient) -> None:
    status, code, message = error_of(post(client, PATH, {"model": "gpt", "text": TEXT, "layer": 7}))
    assert (status, code) == (422, "out_of_range") and "Layer 7" in message and "0 to 1" in message
    status, code, message = error_of(post(client, PATH, {"model": "gpt", "text": TEXT, "head": 4}))
    assert (status, code) == (422, "out_of_range") and "Head 4" in message and "0 to 3" in message
    status, code, _ = error_of(post(client, PATH, {"model": "gpt", "text": TEXT, "head": -1}))
    assert (status, code) == (422, "invalid_request")
    status, code, _ = error_of(post(client, PATH, {"model": "gpt", "text": TEXT, "stack": "encoder"}))
    assert (status, code) == (422, "not_in_model")
