"""POST /api/lab/norm-placement: deterministic for a seed."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.app.conftest import error_of, post


def test_norm_placement_is_deterministic_for_a_seed(client: TestClient) -> None:
    from lab.norm_placement import NormPlacementSettings, compare_norm_placement

    body = {"n_layers": 6, "d_model": 32, "n_heads": 2, "steps": 3, "batch": 4, "seq_len": 16, "seed": 5}
    out = post(client, "/api/lab/norm-placement", body).json()
    direct = compare_norm_placement(NormPlacementSettings(**{k: v for k, v in body.items()}))
    for placement in ("pre", "post"):  # a fresh computation, not the server's cache, gives the same numbers
        assert out[placement] == direct["runs"][placement]  # type: ignore[index]
        assert len(out[placement]["ffn_out_grad_norms"]) == 6 and len(out[placement]["losses"]) == 3
    other = post(client, "/api/lab/norm-placement", {**body, "seed": 6}).json()
    assert other["post"]["ffn_out_grad_norms"] != out["post"]["ffn_out_grad_norms"]
    status, code, message = error_of(post(client, "/api/lab/norm-placement", {"d_model": 64, "n_heads": 3}))
    assert (status, code) == (422, "invalid_option") and "`n_heads`" in message
    status, code, message = error_of(post(client, "/api/lab/norm-placement", {"n_layers": 24, "d_model": 256,
                                                                              "steps": 500}))
    assert (status, code) == (422, "too_much_work") and "`steps`" in message
    status, code, message = error_of(post(client, "/api/lab/norm-placement", {"n_layers": 25}))
    assert (status, code) == (422, "invalid_request") and "n_layers" in message
