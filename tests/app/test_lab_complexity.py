"""POST /api/lab/complexity: naive memory grows as n², tiled stays flat, and the result is cached."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.app.conftest import error_of, post


def test_complexity_memory_is_quadratic_naive_and_flat_tiled_and_cached(client: TestClient) -> None:
    body = {"lengths": [512, 128, 256], "d_model": 64, "n_heads": 2, "block": 64}
    out = post(client, "/api/lab/complexity", body).json()
    assert [m["n"] for m in out["measurements"]] == [128, 256, 512] and out["d_head"] == 32
    assert out["memory_source"] == "counted"  # the tests run on a CPU
    for m in out["measurements"]:
        assert m["naive_peak_bytes"] == 2 * 2 * m["n"] ** 2 * 4 and m["n_squared_bytes"] == m["n"] ** 2 * 4
        assert m["tiled_peak_bytes"] == (2 * 2 * 64 * 64 + 2 * 64 * 34) * 4  # one tile, whatever n
    assert abs(out["naive_memory_fit"]["exponent"] - 2) < 1e-9 and abs(out["tiled_memory_fit"]["exponent"]) < 1e-9
    assert post(client, "/api/lab/complexity", body).json() == out  # cached: the same timings again
    status, code, message = error_of(post(client, "/api/lab/complexity", {"d_model": 64, "n_heads": 3}))
    assert (status, code) == (422, "invalid_option") and "`n_heads`" in message
    status, code, message = error_of(post(client, "/api/lab/complexity", {"lengths": [4096], "n_heads": 16,
                                                                          "d_model": 256}))
    assert (status, code) == (422, "too_much_work") and "`lengths`" in message
    status, code, message = error_of(post(client, "/api/lab/complexity", {"lengths": [4096, 2048], "block": 16}))
    assert (status, code) == (422, "too_much_work") and "`block`" in message
    status, code, message = error_of(post(client, "/api/lab/complexity", {"lengths": [5000]}))
    assert (status, code) == (422, "invalid_request") and "lengths" in message
