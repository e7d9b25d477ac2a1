"""The explorer and the lab on a Qwen3.5-shaped hybrid (gated DeltaNet layers 0 and 1, a gated attention layer 2):
its DeltaNet stages are described and traced, an attention view of a DeltaNet layer is refused by name, and every
lab experiment either answers (those that run the model's own forward pass only) or refuses the model by name —
never a 500 (a number computed as plain attention would not be the model's)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import torch
from fastapi.testclient import TestClient

from app.factory import create_app
from app.lab import EXPERIMENTS
from app.registry import Registry
from app.tensors import decode_tensor
from checkpoints import LoadedModel
from model import Transformer, TransformerConfig
from model.tokenizer import CharTokenizer
from tests.app.conftest import error_of, make_settings, post

HYBRID = {"pos_encoding": "rope", "norm": "rmsnorm", "activation": "swiglu", "bias": False, "n_kv_heads": 2,
          "head_dim": 16, "rope_dims": 4, "qk_norm": True, "attn_output_gate": True, "deltanet_layers": (0, 1),
          "deltanet_key_heads": 2, "deltanet_value_heads": 4, "deltanet_key_dim": 8, "deltanet_value_dim": 12,
          "deltanet_conv": 3}
TEXT = "the cat sat on the mat"


# Qwen3.5-MoE: the same hybrid with 4 experts of 16 (2 chosen) and a shared expert of 24 in every layer
EXPERTS = {"n_experts": 4, "n_experts_used": 2, "expert_d_mlp": 16, "expert_norm_topk": True,
           "shared_expert_d_mlp": 24}


def hybrid_model(tok: CharTokenizer, **experts: Any) -> Transformer:
    cfg = TransformerConfig(vocab_size=tok.vocab_size, d_model=32, n_layers=3, n_heads=4, n_ctx=64, seed=5,
                            init_std=0.3, **HYBRID, **experts)
    return Transformer(cfg).eval()


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    tok = CharTokenizer("abcdefghijklmnopqrstuvwxyz ", specials=("<s>",))
    registry = Registry(default="hybrid")
    registry.add("hybrid", LoadedModel(hybrid_model(tok), tok, {"description": "a tiny Qwen3.5-shaped hybrid",
                                                                 "bos_token": "<s>", "eos_token": "<s>"}),
                 source="test")
    registry.add("hybrid_moe", LoadedModel(hybrid_model(tok, **EXPERTS), tok, {
        "description": "a tiny Qwen3.5-MoE-shaped hybrid", "bos_token": "<s>", "eos_token": "<s>"}), source="test")
    with TestClient(create_app(make_settings(tmp_path_factory.mktemp("qwen35")), registry)) as test_client:
        yield test_client


def test_the_deltanet_stages_are_described_and_traced(client: TestClient) -> None:
    info = client.get("/api/models/hybrid").json()
    stages = {s["name"]: s for s in info["stages"]}
    state = stages["blocks.0.deltanet.hook_state"]
    assert (state["site"], state["step"], state["kind"], state["main"]) == ("deltanet", "dn_state", "deltanet", True)
    assert state["dims"] == ["head", "d_value", "d_key"]
    assert stages["blocks.2.attn.hook_out_gate"]["step"] == "out_gate"
    assert "blocks.0.attn.hook_pattern" not in stages and "blocks.2.attn.hook_pattern" in stages
    out = post(client, "/api/trace", {"model": "hybrid", "text": TEXT, "encoding": "base64",
                                      "stages": ["blocks.1.deltanet.*"]})
    assert out.status_code == 200
    traced = out.json()["stages"]
    assert decode_tensor(traced["blocks.1.deltanet.hook_state"]).shape == (4, 12, 8)
    n_tokens = len(out.json()["tokens"])
    assert decode_tensor(traced["blocks.1.deltanet.hook_state_change"]).shape == (n_tokens, 4)


def test_an_attention_view_of_a_deltanet_layer_is_refused_by_name(client: TestClient) -> None:
    status, code, message = error_of(post(client, "/api/attention", {"model": "hybrid", "text": TEXT, "layer": 0}))
    assert (status, code) == (422, "not_in_model") and "gated DeltaNet" in message and "attention layers: 2" in message
    assert post(client, "/api/attention", {"model": "hybrid", "text": TEXT, "layer": 2}).status_code == 200
    status, code, message = error_of(post(client, "/api/trace", {
        "model": "hybrid", "text": TEXT, "stages": ["hook_logits"], "interventions": {"ablate_heads": [[1, 0]]}}))
    assert (status, code) == (422, "invalid_intervention") and "layer 1 is a gated DeltaNet layer" in message


@pytest.mark.parametrize("model", ["hybrid", "hybrid_moe"])
@pytest.mark.parametrize("experiment", EXPERIMENTS, ids=[e.name for e in EXPERIMENTS])
def test_every_lab_experiment_answers_or_refuses_the_hybrid_by_name(client: TestClient, experiment: object,
                                                                    model: str) -> None:
    path, method = experiment.route, experiment.method  # type: ignore[attr-defined]
    body = {"model": model, "text": TEXT}
    response = client.get(path, params={"model": model}) if method == "GET" else post(client, path, body)
    assert response.status_code != 500, response.text
    if experiment.hybrid:  # type: ignore[attr-defined]
        assert response.status_code in (200, 422), response.text
    else:
        status, code, message = error_of(response)
        body_json = response.json()["error"]
        if code == "not_in_model" and body_json.get("details", {}).get("reason") == "deltanet_model":
            assert "its gated DeltaNet layers (0, 1) keep a state matrix" in message
        else:  # refused earlier for what the request lacks, or for the model's family (architecture)
            assert status == 422, response.text


@pytest.mark.parametrize("model", ["hybrid", "hybrid_moe"])
@pytest.mark.parametrize("name", ["sampling", "generation_tree", "logit_lens", "embedding_persistence", "objectives",
                                  "cached_decoding", "norm_statistics"])
def test_the_experiments_that_only_run_the_forward_pass_answer(client: TestClient, name: str, model: str) -> None:
    experiment = next(e for e in EXPERIMENTS if e.name == name)
    assert experiment.hybrid
    response = post(client, experiment.route, {"model": model, "text": TEXT})
    assert response.status_code == 200, response.text


def test_the_shared_expert_is_described_traced_and_counted_active(client: TestClient) -> None:
    """Qwen3.5-MoE: the shared expert's gate and gated output are stages of the router step; the gate is one number
    per token in (0, 1); the parameter sheet counts the shared expert as active (only unchosen experts are not)."""
    info = client.get("/api/models/hybrid_moe").json()
    stages = {s["name"]: s for s in info["stages"]}
    gate, out = stages["blocks.0.mlp.hook_shared_gate"], stages["blocks.0.mlp.hook_shared_out"]
    assert (gate["step"], gate["kind"], gate["main"], gate["dims"]) == ("router", "router", False, ["pos"])
    assert (out["step"], out["dims"]) == ("router", ["pos", "d_model"])
    traced = post(client, "/api/trace", {"model": "hybrid_moe", "text": TEXT, "encoding": "base64",
                                         "stages": ["blocks.2.mlp.hook_shared_gate"]}).json()
    values = decode_tensor(traced["stages"]["blocks.2.mlp.hook_shared_gate"])
    assert values.shape == (len(traced["tokens"]),) and ((values > 0) & (values < 1)).all()
    expert = 3 * 32 * 16
    params = info["parameters"]
    assert params["active"] == params["total"] - 3 * (4 - 2) * expert


def test_the_kv_cache_counts_the_fixed_state_beside_the_growing_cache(client: TestClient) -> None:
    """Layer 2 caches K and V per token (2 · 2 K/V heads · 16 · 2 bytes); layers 0 and 1 keep a state of 4 heads of
    12 × 8 and 2 convolution inputs of 2 · 2 · 8 + 4 · 12 channels, at any context."""
    out = client.get("/api/lab/kv-cache-size", params={"context": 10, "dtype": "float16"}).json()
    row = next(r for r in out["models"][0]["variants"] if r["kv_heads"] == 2)
    state = 2 * (4 * 12 * 8 + 2 * (2 * 2 * 8 + 4 * 12)) * 2
    assert (row["layers"], row["deltanet_layers"], row["state_bytes"]) == (1, 2, state)
    assert row["bytes_per_token"] == 2 * 1 * 2 * 16 * 2 and row["total_bytes"] == 10 * row["bytes_per_token"] + state
    longer = client.get("/api/lab/kv-cache-size", params={"context": 40, "dtype": "float16"}).json()
    assert next(r for r in longer["models"][0]["variants"] if r["kv_heads"] == 2)["state_bytes"] == state


def test_cached_decoding_caches_the_deltanet_state_and_counts_its_fixed_work(client: TestClient) -> None:
    """Layers 0 and 1 keep a state (4 heads of 12 × 8) and 2 convolution inputs (2 · 2 · 8 + 4 · 12 channels), in
    float32; each token costs them 2 · 4 · 3 · 8 · 12 state cells at any position; every step equals the full pass."""
    response = post(client, "/api/lab/cached-decoding", {"model": "hybrid", "text": TEXT, "max_new_tokens": 3})
    assert response.status_code == 200, response.text
    out = response.json()
    state = 2 * (4 * 12 * 8 + 2 * (2 * 2 * 8 + 4 * 12)) * 4
    assert (out["layers"], out["deltanet_layers"], out["state_bytes"]) == (1, 2, state)
    assert out["state_cells_per_token"] == 2 * 4 * 3 * 8 * 12 and (out["d_key"], out["d_value"]) == (8, 12)
    for step in out["steps"]:
        assert step["max_diff"] < 1e-4 and step["cache_bytes"] == step["formula_bytes"]
        assert step["state_cells"] == out["state_cells_per_token"] * step["cache_positions"]


def test_objectives_reads_the_hybrids_own_losses_and_counts_its_deltanet_weights(client: TestClient) -> None:
    """The losses are the cross-entropy of the model's own logits (the same seeded weights, run here); N counts the
    DeltaNet layers' weights with the attention's."""
    out = post(client, "/api/lab/objectives", {"model": "hybrid", "text": TEXT}).json()
    model = hybrid_model(CharTokenizer("abcdefghijklmnopqrstuvwxyz ", specials=("<s>",)))
    ids = torch.tensor([[t["id"] for t in out["tokens"]]])
    with torch.inference_mode():
        want = torch.nn.functional.cross_entropy(model(ids)[0, :-1], ids[0, 1:], reduction="none")
    assert torch.allclose(torch.tensor(out["causal"]["losses"]), want, atol=1e-4)
    deltanet = sum(p.numel() for name, p in model.named_parameters() if ".deltanet." in name)
    attention = sum(p.numel() for name, p in model.named_parameters() if ".attn." in name)
    assert out["compute"]["attention"] == deltanet + attention and deltanet > 0


def test_linear_attention_on_a_hybrid_sets_its_own_deltanet_head_beside_its_attention_toy(client: TestClient) -> None:
    """Issue 43: on a hybrid the toy runs on an attention layer (exact: the model's own pattern and z) and the real
    head is the model's own DeltaNet head, on its own tokens; a DeltaNet layer for the toy is refused by name."""
    route = next(e for e in EXPERIMENTS if e.name == "linear_attention").route
    out = post(client, route, {"model": "hybrid", "text": TEXT, "layer": 2, "head": 1, "dn_layer": 1,
                               "dn_head": 3}).json()
    assert out["max_diff_z"] <= 1e-5 and out["max_diff_pattern"] <= 1e-5
    real = out["deltanet"]
    assert (real["model"], real["layer"], real["head"], real["d_value"], real["d_key"]) == ("hybrid", 1, 3, 12, 8)
    assert [t["id"] for t in real["tokens"]] == [t["id"] for t in out["query_tokens"]]
    assert (real["attention_layer"], real["kv_per_token"]) == (2, 2 * 2 * 16)
    status, code, message = error_of(post(client, route, {"model": "hybrid", "text": TEXT, "layer": 0}))
    assert (status, code) == (422, "not_in_model") and "DeltaNet" in message
    status, code, message = error_of(post(client, route, {"model": "hybrid", "text": TEXT, "layer": 2,
                                                          "dn_layer": 2}))
    assert (status, code) == (422, "not_in_model") and "(hybrid)" in message and "layers 0, 1" in message
