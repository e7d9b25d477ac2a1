"""/api/lab/*: the mathematics through the API, the limits, and errors that name the bad option."""

from __future__ import annotations

import numpy as np
from fastapi.testclient import TestClient

from app.tensors import decode_tensor
from tests.app.conftest import error_of, post

TEXT = "the cat sat"


def test_scaling_variance_is_d_k_and_model_heads_are_measured(client: TestClient) -> None:
    out = post(client, "/api/lab/scaling", {"d_k": [64, 512], "samples": 4096}).json()
    for d_k, variance, scaled in zip(out["d_k"], out["variance"], out["scaled_variance"], strict=True):
        assert abs(variance - d_k) / d_k < 0.10 and abs(scaled - 1) < 0.10
    assert out["heads"] is None and out["model"] is None
    real = post(client, "/api/lab/scaling", {"model": "gpt", "text": TEXT, "d_k": [64, 512], "layer": 1}).json()
    assert {k: real[k] for k in ("variance", "max_unscaled")} == {k: out[k] for k in ("variance", "max_unscaled")}
    heads = real["heads"]
    assert heads["layer"] == 1 and heads["d_head"] == 8 and len(heads["var_raw"]) == 4
    for raw, scaled in zip(heads["var_raw"], heads["var_scaled"], strict=True):
        assert abs(raw - scaled * 8) <= 1e-5 * max(1.0, raw)  # Var(x/√8) = Var(x)/8


def test_scaling_limits_name_the_option(client: TestClient) -> None:
    status, code, message = error_of(post(client, "/api/lab/scaling", {"d_k": [4, 2048]}))
    assert (status, code) == (422, "invalid_option") and "`d_k`" in message
    status, code, message = error_of(post(client, "/api/lab/scaling", {"d_k": [1024] * 12, "samples": 8192}))
    assert (status, code) == (422, "too_much_work") and "`samples`" in message
    status, code, message = error_of(post(client, "/api/lab/scaling", {"model": "gpt", "text": TEXT, "layer": 9}))
    assert (status, code) == (422, "out_of_range") and "Layer 9" in message
    status, code, _ = error_of(post(client, "/api/lab/scaling", {"model": "/etc/passwd", "d_k": [4]}))
    assert (status, code) == (404, "unknown_model")  # checked even when no text asks for the model's heads


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


def test_parameters_equal_the_state_dict_and_the_weights_listed(client: TestClient) -> None:
    for name in ("gpt", "bert", "translator"):
        out = post(client, "/api/lab/parameters", {"model": name}).json()
        weights = client.get(f"/api/models/{name}").json()["weights"]
        assert out["counts"]["total"] == out["state_dict_total"] == sum(w["count"] for w in weights)
        assert out["ffn_share"] == out["counts"]["mlp"] / out["counts"]["total"]
    out = post(client, "/api/lab/parameters", {"config": {"d_model": 512, "n_heads": 8, "n_layers": 1}}).json()
    splits = {row["n_heads"]: row["total"] for row in out["head_splits"]}
    assert splits[1] == splits[8] == 4 * (512 * 512 + 512)
    kinds = [row["kind"] for row in out["kv_sharing"]]
    assert kinds[0] == "MHA" and kinds[-1] == "MQA" and "GQA" in kinds
    own = post(client, "/api/lab/parameters", {"model": "gpt"}).json()["own_attention"]  # 4 query, 2 K/V heads
    assert (own["kind"], own["n_kv_heads"]) == ("GQA", 2)
    assert (own["W_Q"], own["W_K"], own["W_V"], own["W_O"], own["total"]) == (1024, 512, 512, 1024, 3072)


def test_sampling_is_seeded_and_filters(client: TestClient) -> None:
    body = {"model": "gpt", "text": TEXT, "temperature": 0.8, "top_k": 12, "top_p": 0.5, "seed": 3, "draws": 50}
    first, again = post(client, "/api/lab/sampling", body).json(), post(client, "/api/lab/sampling", body).json()
    assert first["draws"] == again["draws"] and len(first["draws"]) == 50
    other = post(client, "/api/lab/sampling", {**body, "seed": 4}).json()
    assert other["draws"] != first["draws"]
    assert first["kept"]["top_k"] == 12 and first["kept"]["final"] <= 12
    allowed = {row["id"] for row in first["rows"] if row["final"] > 0}
    assert set(first["draws"]) <= allowed and sum(first["counts"].values()) == 50
    greedy = post(client, "/api/lab/sampling", {**body, "top_k": 1}).json()
    assert greedy["kept"]["final"] == 1 and set(greedy["draws"]) == {greedy["rows"][0]["id"]}
    status, code, _ = error_of(post(client, "/api/lab/sampling", {"model": "bert", "text": TEXT}))
    assert (status, code) == (422, "not_generative")
    status, code, message = error_of(post(client, "/api/lab/sampling", {"model": "gpt", "text": TEXT, "top_p": 2}))
    assert (status, code) == (422, "invalid_request") and "top_p" in message
