"""POST /api/lab/parameters: the counts equal the state dict and the weights listed."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.app.conftest import post


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
