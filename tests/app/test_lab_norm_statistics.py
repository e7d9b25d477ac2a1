"""POST /api/lab/norm-statistics: a padded batch of two sentences, the model's own norm statistics, BatchNorm's per
feature over the real tokens, the swap that moves BatchNorm only; refusals that name the option."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.app.conftest import error_of, post

BODY = {"text": "the cat sat on the mat", "other": "hello", "swap": "the mat sat on the cat again", "layer": 1}


@pytest.mark.parametrize(("model", "norm"), [("gpt", "rmsnorm"), ("bert", "layernorm")])
def test_norm_statistics_on_a_padded_batch(client: TestClient, model: str, norm: str) -> None:
    out = post(client, "/api/lab/norm-statistics", {**BODY, "model": model}).json()
    assert out["norm"] == norm and out["layer"] == 1 and out["model_scale_diff"] < 1e-5
    first, second = out["sentences"]
    n1, n2 = len(first["tokens"]), len(second["tokens"])
    assert out["width"] == max(n1, n2) and out["real_tokens"] == n1 + n2
    assert out["pad_positions"] == 2 * out["width"] - n1 - n2
    for sentence, n in ((first, n1), (second, n2)):
        for key in ("ln_mean", "ln_sigma", "rms"):  # a value per real token, None at each pad position
            assert len(sentence[key]) == out["width"]
            assert all(v is not None for v in sentence[key][:n]) and all(v is None for v in sentence[key][n:])
        stats = zip(sentence["ln_mean"][:n], sentence["ln_sigma"][:n], sentence["rms"][:n], strict=True)
        for mean, sigma, rms in stats:
            assert abs(rms**2 - (sigma**2 + mean**2)) < 1e-3 * max(1.0, rms**2)  # E[x²] = Var + mean²
    assert len(out["bn_mean"]) == len(out["bn_sigma"]) == out["d_model"] == 32
    assert len(out["swap_batch_norm"]) == n1
    assert max(out["swap_layer_norm"]) < 1e-5 and max(out["swap_rms_norm"]) < 1e-5
    assert min(out["swap_batch_norm"]) > 1e-3


def test_norm_statistics_refusals_name_the_option(client: TestClient) -> None:
    status, code, message = error_of(post(client, "/api/lab/norm-statistics", {**BODY, "model": "gpt", "other": ""}))
    assert (status, code) == (422, "empty_text") and "other" in message
    long = {**BODY, "model": "gpt", "swap": "x" * 100}
    status, code, message = error_of(post(client, "/api/lab/norm-statistics", long))
    assert (status, code) == (422, "text_too_long") and "swap" in message and "64" in message
    status, code, message = error_of(post(client, "/api/lab/norm-statistics", {**BODY, "model": "gpt", "layer": 2}))
    assert (status, code) == (422, "out_of_range") and "Layer 2" in message
    status, code, _ = error_of(post(client, "/api/lab/norm-statistics", {**BODY, "model": "translator"}))
    assert (status, code) == (422, "not_in_model")
    status, code, message = error_of(post(client, "/api/lab/norm-statistics", {**BODY, "model": "gpt", "chat": True}))
    assert status == 422 and "chat" in message
