"""POST /api/lab/linear-attention: the softmax part is the model's own head (/api/qkv's z), the linear weights are
rows of a causal (decoder) or full (encoder) matrix, the memory is the formulas, and a bad layer or head is a 422
that names the limit."""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.tensors import decode_tensor
from tests.app.conftest import error_of, post

TEXT = "the cat sat on"
ROUTE = "/api/lab/linear-attention"


@pytest.mark.parametrize(("model", "extra", "causal"), [
    ("gpt", {"layer": 1, "head": 3}, True), ("bert", {"layer": 0, "head": 1}, False),
    ("translator", {"target_text": "ab", "stack": "decoder", "cross": True, "head": 2}, False),
])
def test_softmax_is_the_models_head_and_linear_is_the_kernel(client: TestClient, model: str,
                                                             extra: dict[str, object], causal: bool) -> None:
    body = {"model": model, "text": TEXT, **extra}
    out = post(client, ROUTE, {**body, "encoding": "base64"}).json()
    qkv = post(client, "/api/qkv", {**body, "encoding": "base64"}).json()
    z = decode_tensor(qkv["tensors"]["z"])
    soft = decode_tensor(out["softmax_output"])
    assert np.abs(soft - z.reshape(soft.shape)).max() <= 1e-5
    assert out["max_diff_z"] <= 1e-5 and out["max_diff_pattern"] <= 1e-5 and out["max_diff_forms"] <= 1e-5
    assert out["causal"] is causal
    lin = np.array(out["linear_weights"])
    assert lin.shape == (len(out["query_tokens"]), len(out["key_tokens"]))
    assert np.allclose(lin.sum(-1), 1, atol=1e-5)
    assert np.allclose(np.array(out["softmax_weights"]).sum(-1), 1, atol=1e-5)
    assert (np.triu(lin, 1) == 0).all() == causal  # causal rows put nothing on later keys; an encoder's do
    assert (lin[:, 0] > 0).all()  # every visible weight of a positive kernel is > 0
    entropy = -(lin * np.log(np.where(lin > 0, lin, 1))).sum(-1)
    assert np.allclose(out["linear_entropy"], entropy, atol=1e-5)
    assert np.allclose(out["linear_max"], lin.max(-1), atol=1e-6)
    assert len(out["cosine"]) == len(out["relative_error"]) == len(out["query_tokens"])
    linear = decode_tensor(out["linear_output"])
    cosine = (soft * linear).sum(-1) / np.linalg.norm(soft, axis=-1) / np.linalg.norm(linear, axis=-1)
    assert np.allclose(out["cosine"], cosine, atol=1e-5)
    mem = out["memory"]
    d, n = out["d_head"], len(out["key_tokens"])
    assert (mem["state_numbers"], mem["kv_cache_numbers"], mem["n"]) == (d * d + d, 2 * n * d, n)
    assert 2 * mem["crossover_length"] * d > d * d + d >= 2 * (mem["crossover_length"] - 1) * d
    assert mem["lengths"] == list(range(len(mem["lengths"])))
    assert mem["lengths"][-1] >= max(n, 2 * mem["crossover_length"])
    assert mem["kv_cache_curve"] == [2 * length * d for length in mem["lengths"]]
    assert out["rotated"] is (model == "gpt")


def test_a_bad_layer_or_head_names_the_limit(client: TestClient) -> None:
    status, code, message = error_of(post(client, ROUTE, {"model": "gpt", "text": TEXT, "head": 4}))
    assert (status, code) == (422, "out_of_range") and "Head 4" in message and "0 to 3" in message
    status, code, message = error_of(post(client, ROUTE, {"model": "gpt", "text": TEXT, "layer": 2}))
    assert (status, code) == (422, "out_of_range") and "Layer 2" in message and "0 to 1" in message
    status, code, message = error_of(post(client, ROUTE, {"model": "gpt", "text": TEXT, "layer": 65}))
    assert (status, code) == (422, "out_of_range") and "0 to 1" in message
    status, code, message = error_of(post(client, ROUTE, {"model": "gpt", "text": TEXT, "layer": 5000}))
    assert (status, code) == (422, "invalid_request") and "layer" in message
    status, code, _ = error_of(post(client, ROUTE, {"model": "gpt", "text": TEXT, "cross": True}))
    assert (status, code) == (422, "not_in_model")


def test_a_real_deltanet_head_beside_the_toy(client: TestClient) -> None:
    """The shipped tiny-deltanet's DeltaNet head on the same text, from its own forward pass (lab/deltanet_head.py):
    S [d_value, d_key], a number per token for its change, kept share and β, and the attention layer's cache."""
    from lab.deltanet_head import deltanet_head, shipped_hybrid, text_tokens

    out = post(client, ROUTE, {"model": "gpt", "text": TEXT, "dn_layer": 1, "dn_head": 2}).json()["deltanet"]
    loaded = shipped_hybrid()
    tokens = text_tokens(loaded, TEXT)
    real = deltanet_head(loaded.model, [t.id for t in tokens], 1, 2)
    assert (out["model"], out["layer"], out["head"], out["key_head"]) == ("tiny-deltanet", 1, 2, 1)
    assert [t["id"] for t in out["tokens"]] == [t.id for t in tokens]
    assert np.array(out["state"]).shape == (out["d_value"], out["d_key"]) == tuple(real.state.shape)
    assert np.allclose(out["state"], real.state.numpy(), atol=1e-6)
    assert len(out["change"]) == len(out["kept"]) == len(out["beta"]) == len(out["read_norm"]) == len(tokens)
    assert out["change"][0] == pytest.approx(1.0) and out["half_state_shape"] == [out["d_value"], out["d_key"]]
    assert out["state_numbers"] == out["d_value"] * out["d_key"] and out["layer_state_numbers"] == 4 * 1024
    assert (out["attention_layer"], out["kv_per_token"], out["kv_numbers"]) == (3, 128, 128 * len(tokens))


def test_a_head_the_real_model_lacks_is_refused_before_any_pass(client: TestClient) -> None:
    status, code, message = error_of(post(client, ROUTE, {"model": "gpt", "text": TEXT, "dn_layer": 3}))
    assert (status, code) == (422, "not_in_model") and "layers 0, 1, 2" in message and "tiny-deltanet" in message
    status, code, message = error_of(post(client, ROUTE, {"model": "gpt", "text": TEXT, "dn_head": 4}))
    assert (status, code) == (422, "not_in_model") and "value heads 0 to 3" in message
