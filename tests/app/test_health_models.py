"""GET /api/health, /api/models, /api/models/{name}, the docs, headers and compression."""

from __future__ import annotations

import torch
from fastapi.testclient import TestClient

from tests.app.conftest import error_of


def test_health(client: TestClient) -> None:
    body = client.get("/api/health").json()
    assert body["status"] == "ok"
    assert body["device"] == "cpu"
    assert body["torch"] == torch.__version__
    assert body["models"] == ["gpt", "bert", "translator"]
    assert body["default"] == "gpt"


def test_models_list_describes_every_model(client: TestClient) -> None:
    models = {m["name"]: m for m in client.get("/api/models").json()}
    assert set(models) == {"gpt", "bert", "translator"}
    gpt = models["gpt"]
    assert gpt["default"] is True and not models["bert"]["default"]
    assert gpt["architecture"] == "decoder"
    assert (gpt["n_layers"], gpt["n_heads"], gpt["n_kv_heads"], gpt["d_head"]) == (2, 4, 2, 8)
    assert gpt["config"]["pos_encoding"] == "rope"
    assert gpt["parameters"]["total"] == sum(v for k, v in gpt["parameters"].items() if k != "total")
    assert gpt["tokenizer"] == "char"
    assert gpt["meta"]["bos_token"] == "<|endoftext|>"
    stages = {s["name"]: s["dims"] for s in gpt["stages"]}
    assert stages["blocks.0.attn.hook_pattern"] == ["head", "q_pos", "k_pos"]  # batch is not served
    assert "blocks.1.attn.hook_rot_q" in stages
    assert models["translator"]["n_decoder_layers"] == 1
    assert "decoder.blocks.0.cross_attn.hook_pattern" in {s["name"] for s in models["translator"]["stages"]}


def test_model_by_name_and_unknown(client: TestClient) -> None:
    assert client.get("/api/models/bert").json()["architecture"] == "encoder"
    status, code, message = error_of(client.get("/api/models/nope"))
    assert (status, code) == (404, "unknown_model")
    assert "gpt, bert, translator" in message


def test_openapi_lists_every_endpoint_with_examples(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    paths = set(spec["paths"])
    for path in ("/api/health", "/api/models", "/api/models/{name}", "/api/tokenize", "/api/trace", "/api/attention",
                 "/api/qkv", "/api/activations", "/api/positional-encoding", "/api/predict"):
        assert path in paths
    assert spec["components"]["schemas"]["TraceRequest"]["examples"]
    assert "f2" in spec["info"]["description"]
    assert client.get("/docs").status_code == 200


def test_security_headers_and_gzip(client: TestClient) -> None:
    response = client.get("/api/models", headers={"accept-encoding": "gzip"})
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["content-encoding"] == "gzip"
    assert "access-control-allow-origin" not in client.get("/api/health", headers={"origin": "http://x.test"}).headers


def test_unknown_path_is_a_json_404(client: TestClient) -> None:
    status, code, _ = error_of(client.get("/api/nothing"))
    assert (status, code) == (404, "not_found")


def test_model_info_lists_every_weight_once(client: TestClient) -> None:
    info = client.get("/api/models/gpt").json()
    weights = {w["name"]: w for w in info["weights"]}
    assert sum(w["count"] for w in info["weights"]) == info["parameters"]["total"]
    d_model, kv_width = info["config"]["d_model"], info["n_kv_heads"] * info["d_head"]
    assert weights["stack.blocks.0.attn.W_K.weight"]["shape"] == [kv_width, d_model]  # GQA: narrower K
