"""GET /api/lab/kv-cache-size: the bytes are the closed form, and GQA with 8 of 32 K/V heads is a quarter of MHA."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.app.conftest import error_of


def test_kv_cache_bytes_are_the_closed_form_and_gqa_8_of_32_is_a_quarter(client: TestClient) -> None:
    out = client.get("/api/lab/kv-cache-size", params={"context": 32768, "batch": 3, "dtype": "bfloat16"}).json()
    rows = {row["name"]: row for row in out["published"]}
    assert {"GPT-2 small", "GPT-3 175B", "Llama-2-7B", "Llama-2-70B", "Llama-3-8B", "Mistral-7B", "Qwen2.5-0.5B",
            "Qwen2.5-7B", "SmolLM2-135M"} <= set(rows)
    for row in out["published"]:
        positions = min(32768, row["context"], row["sliding_window"] or 32768)
        per_token = 2 * row["layers"] * row["kv_heads"] * row["d_head"] * 2
        assert row["cached_positions"] == positions
        assert row["bytes_per_token"] == per_token and row["total_bytes"] == per_token * positions * 3
    assert rows["Llama-2-70B"]["kv_heads"] == 8 and rows["Mistral-7B"]["cached_positions"] == 4096
    assert rows["Llama-2-7B"]["cached_positions"] == 4096 and rows["GPT-2 small"]["cached_positions"] == 1024
    assert rows["GPT-3 175B"]["total_bytes"] == 2 * 96 * 96 * 128 * 2 * 2048 * 3
    same = client.get("/api/lab/kv-cache-size", params={"context": 4096, "dtype": "bfloat16"}).json()
    by_name = {row["name"]: row for row in same["published"]}
    assert by_name["Llama-3-8B"]["total_bytes"] * 4 == by_name["Llama-2-7B"]["total_bytes"]  # 8 of 32 KV heads: ¼
    models = {m["model"]: m for m in out["models"]}
    assert set(models) == {"gpt", "bert", "translator"} and not models["bert"]["decodes"]
    assert models["bert"]["variants"] == [] and "encoder" in models["bert"]["note"]  # no bars, and why
    gpt = {v["attention"]: v for v in models["gpt"]["variants"]}
    assert models["gpt"]["own"] == "GQA" and [gpt[k]["kv_heads"] for k in ("MHA", "GQA", "MQA")] == [4, 2, 1]
    assert all(v["cached_positions"] == 64 for v in gpt.values())  # the model's n_ctx, not the 32768 asked
    assert gpt["MHA"]["total_bytes"] == 2 * 2 * 4 * 8 * 2 * 64 * 3 == 4 * gpt["MQA"]["total_bytes"]
    own = client.get("/api/lab/kv-cache-size").json()  # no context asked: each model's own
    assert own["context"] is None and {r["name"]: r["cached_positions"] for r in own["published"]}["Llama-3-8B"] == 8192
    status, code, message = error_of(client.get("/api/lab/kv-cache-size", params={"dtype": "float64"}))
    assert (status, code) == (422, "invalid_request") and "dtype" in message
    status, code, message = error_of(client.get("/api/lab/kv-cache-size", params={"context": 0}))
    assert (status, code) == (422, "invalid_request") and "context" in message
