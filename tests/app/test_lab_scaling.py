"""POST /api/lab/scaling: Var(q·k) ≈ d_k through the API, the model's heads measured, limits that name the option."""

from __future__ import annotations

from fastapi.testclient import TestClient

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


def test_scaling_measures_the_gradient_through_softmax_per_row(client: TestClient) -> None:
    heads = post(client, "/api/lab/scaling", {"model": "gpt", "text": TEXT, "d_k": [4], "layer": 1}).json()["heads"]
    n_pos = len(TEXT) + 1  # characters and the start token
    for label in ("scaled", "unscaled"):
        rows = heads[f"jacobian_rows_{label}"]
        assert len(rows) == 4 and all(len(row) == n_pos for row in rows)
        for row, mean in zip(rows, heads[f"jacobian_{label}"], strict=True):
            assert row[0] == 0  # the first query sees one key: weight 1, no gradient
            assert all(0 <= x <= 0.5 + 1e-9 for x in row)  # ‖diag(p) − p pᵀ‖ is at most 1/2
            assert abs(sum(row) / n_pos - mean) < 1e-5


def test_scaling_limits_name_the_option(client: TestClient) -> None:
    status, code, message = error_of(post(client, "/api/lab/scaling", {"d_k": [4, 2048]}))
    assert (status, code) == (422, "invalid_option") and "`d_k`" in message
    status, code, message = error_of(post(client, "/api/lab/scaling", {"d_k": [1024] * 12, "samples": 8192}))
    assert (status, code) == (422, "too_much_work") and "`samples`" in message
    status, code, message = error_of(post(client, "/api/lab/scaling", {"model": "gpt", "text": TEXT, "layer": 9}))
    assert (status, code) == (422, "out_of_range") and "Layer 9" in message
    status, code, _ = error_of(post(client, "/api/lab/scaling", {"model": "/etc/passwd", "d_k": [4]}))
    assert (status, code) == (404, "unknown_model")  # checked even when no text asks for the model's heads
