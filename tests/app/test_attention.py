"""POST /api/attention, /api/qkv and /api/activations, checked for consistency through the API."""

from __future__ import annotations

import math

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.tensors import decode_tensor
from tests.app.conftest import post

TEXT = "attention is all"


@pytest.mark.parametrize(("model", "extra"), [("gpt", {}), ("bert", {}), ("translator", {"cross": True}),
                                              ("translator", {"stack": "decoder"}), ("translator", {})])
def test_attention_identities(client: TestClient, model: str, extra: dict[str, object]) -> None:
    body = post(client, "/api/attention", {"model": model, "text": TEXT, "target_text": "ab", "layer": 0,
                                           **extra}).json()
    raw, scaled, masked, pattern = (decode_tensor(body[k]) for k in ("raw", "scaled", "masked", "pattern"))
    n_q, n_k = len(body["query_tokens"]), len(body["key_tokens"])
    assert pattern.shape == (len(body["heads"]), n_q, n_k)
    np.testing.assert_allclose(pattern.sum(-1), 1.0, atol=1e-3)  # each row is a distribution
    np.testing.assert_allclose(scaled, raw / math.sqrt(body["d_head"]), rtol=2e-3, atol=1e-6)  # no ALiBi here
    hidden = np.isnan(masked)
    assert (pattern[hidden] == 0).all()  # a hidden (null) cell gets no attention
    causal = model == "gpt" or (model == "translator" and extra.get("stack") == "decoder")
    assert hidden.any() == causal
    # the hover breakdown: raw[h, q, k] = Q[q, h] · K[k, kv(h)]
    q, k = decode_tensor(body["q"]), decode_tensor(body["k"])
    kv_index = {kv: i for i, kv in enumerate(sorted(set(body["kv_heads"])))}
    for h, kv in enumerate(body["kv_heads"]):
        # 4 significant digits per factor: compare within rounding of the largest score
        np.testing.assert_allclose(q[:, h] @ k[:, kv_index[kv]].T, raw[h], rtol=1e-2, atol=2e-3 * np.abs(raw).max())


def test_attention_one_head_with_rope_and_gqa(client: TestClient) -> None:
    body = post(client, "/api/attention", {"model": "gpt", "text": TEXT, "layer": 1, "head": 3}).json()
    assert body["heads"] == [3] and body["kv_heads"] == [1] and body["rope"] is True
    assert body["q"]["name"] == "blocks.1.attn.hook_rot_q"  # the rotated vectors are the ones that meet
    assert body["pattern"]["shape"] == [1, 17, 17]
    assert body["query_tokens"] == body["key_tokens"]


def test_cross_attention_queries_target_keys_source(client: TestClient) -> None:
    body = post(client, "/api/attention", {"model": "translator", "text": "abc", "target_text": "xy", "layer": 0,
                                           "cross": True}).json()
    assert [t["text"] for t in body["query_tokens"]] == ["<s>", "x", "y"]
    assert [t["text"] for t in body["key_tokens"]] == ["a", "b", "c"]
    assert body["pattern"]["name"] == "decoder.blocks.0.cross_attn.hook_pattern"


@pytest.mark.parametrize("model", ["gpt", "bert", "translator"])
def test_qkv_z_is_pattern_times_v(client: TestClient, model: str) -> None:
    body = post(client, "/api/qkv", {"model": model, "text": TEXT, "layer": 1 if model != "translator" else 0}).json()
    t = {name: decode_tensor(tensor) for name, tensor in body["tensors"].items()}
    kv_index = {kv: i for i, kv in enumerate(sorted(set(body["kv_heads"])))}
    for h, kv in enumerate(body["kv_heads"]):
        z = t["pattern"][h] @ t["v"][:, kv_index[kv]]  # [q_pos, d_head]
        np.testing.assert_allclose(z, t["z"][:, h], rtol=1e-2, atol=2e-3 * np.abs(t["z"]).max())
    assert ("rot_q" in t) == (model == "gpt")


def test_activations_one_layer(client: TestClient) -> None:
    body = post(client, "/api/activations", {"model": "gpt", "text": TEXT, "layer": 1}).json()
    stages = body["stages"]
    assert body["layers"] == [1]
    for name in ("blocks.1.hook_resid_pre", "blocks.1.ln1.hook_scale", "blocks.1.ln1.hook_normalized",
                 "blocks.1.mlp.hook_pre", "blocks.1.mlp.hook_gate", "blocks.1.mlp.hook_up", "blocks.1.mlp.hook_post",
                 "blocks.1.hook_resid_mid", "blocks.1.hook_resid_post"):
        assert name in stages
    assert not any(".attn." in n for n in stages)
    resid = decode_tensor(stages["blocks.1.hook_resid_post"])
    norms = decode_tensor(body["norms"]["blocks.1.hook_resid_post"])
    np.testing.assert_allclose(norms, np.linalg.norm(resid, axis=-1), rtol=2e-3)
    # RMSNorm statistics: normalized = resid_pre / scale * w (w = 1 at init)
    scale = decode_tensor(stages["blocks.1.ln1.hook_scale"])
    normed = decode_tensor(stages["blocks.1.ln1.hook_normalized"])
    np.testing.assert_allclose(normed, decode_tensor(stages["blocks.1.hook_resid_pre"]) / scale[:, None], rtol=3e-3,
                               atol=1e-4)


def test_activations_all_layers_and_layernorm_mean(client: TestClient) -> None:
    body = post(client, "/api/activations", {"model": "bert", "text": TEXT}).json()
    assert body["layers"] == [0, 1]
    assert "blocks.0.ln1.hook_mean" in body["stages"] and "blocks.1.hook_resid_post_unnormed" in body["stages"]
    dec = post(client, "/api/activations", {"model": "translator", "text": TEXT, "stack": "decoder"}).json()
    assert dec["layers"] == [0] and "decoder.blocks.0.hook_cross_attn_out" in dec["stages"]
    assert "decoder.ln_final.hook_normalized" in dec["stages"]
