"""POST /api/lab/quantization: the numbers are the lab's and the model's own (its top tokens' float32 probabilities
are /api/trace's), and every bad request (encoders, encoder-decoders, nothing to compare, an unknown type, too much
work) is a 422 that says why."""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.lab import quantization
from tests.app.conftest import error_of, post, softmax, trace_logits

BODY: dict[str, object] = {"model": "gpt", "text": "the cat sat on the mat", "requantize": "Q4_0", "top": 4}
INLINE = {"architecture": "decoder", "d_model": 64, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2,
          "pos_encoding": "rope", "seed": 3}


def test_the_numbers(client: TestClient) -> None:
    out = post(client, "/api/lab/quantization", BODY).json()
    n = len(out["tokens"])
    assert out["forwards"] == 3 and not out["from_file"] and out["file_types"] == {}
    assert out["rounded_inputs"] == out["linear_inputs"] == 4 * 2 + 1
    assert [run["kind"] for run in out["runs"]] == ["activations", "requantized"]
    assert out["runs"][1]["type"] == "Q4_0"
    probabilities = softmax(trace_logits(client, {"model": "gpt", "text": BODY["text"]}))[-1]
    for run in out["runs"]:
        assert len(run["kl"]) == len(run["agree"]) == n and min(run["kl"]) >= 0 and run["max_kl"] > 0
        assert run["mean_kl"] == pytest.approx(float(np.mean(run["kl"])), abs=1e-6)
        assert run["agreement"] == pytest.approx(sum(run["agree"]) / n)
        top = run["top"]
        assert len(top) == 4 and [t["id"] for t in top] == list(np.argsort(-probabilities)[:4])
        assert all(t["float32"] == pytest.approx(probabilities[t["id"]], abs=1e-5) for t in top)
        assert run["top1"]["other"] >= max(t["other"] for t in top) - 1e-6
    errors = out["weight_error"]
    assert errors["type"] == "Q4_0" and len(errors["attention"]) == len(errors["ffn"]) == 2
    assert all(0 < e < 0.5 for e in errors["attention"] + errors["ffn"]) and errors["embedding"] is None


def test_only_the_rounding(client: TestClient) -> None:
    out = post(client, "/api/lab/quantization", {**BODY, "requantize": "none"}).json()
    assert out["forwards"] == 2 and len(out["runs"]) == 1 and out["weight_error"] is None
    both = post(client, "/api/lab/quantization", BODY).json()
    assert out["runs"][0] == both["runs"][0]  # each comparison is its own forward pass from the float32 one
    weights = post(client, "/api/lab/quantization", {**BODY, "activations": False, "requantize": "Q8_0"}).json()
    assert [run["kind"] for run in weights["runs"]] == ["requantized"]
    q4 = both["weight_error"]
    assert max(weights["weight_error"]["attention"]) < min(q4["attention"])  # 8 bits err less than 4


def test_an_inline_gqa_rope_model(client: TestClient) -> None:
    out = post(client, "/api/lab/quantization", {**BODY, "model": None, "config": INLINE}).json()
    assert out["rounded_inputs"] == 9 and out["runs"][0]["max_kl"] > 0


def test_bad_requests_are_clear(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(**changes: object) -> tuple[int, str, str]:
        return error_of(post(client, "/api/lab/quantization", {**BODY, **changes}))

    assert refused(model="bert")[:2] == (422, "not_generative")
    status, code, message = refused(model="translator")
    assert (status, code) == (422, "not_in_model") and "encoder-decoder" in message
    status, code, message = refused(activations=False, requantize="none")
    assert (status, code) == (422, "invalid_option") and "nothing to compare" in message
    status, _, message = refused(requantize="Q2_K")
    assert status == 422 and "requantize" in message
    assert refused(top=11)[0] == 422
    monkeypatch.setattr(quantization, "MAX_FORWARDS", 2)
    status, code, message = refused(text="a sentence no test asked before")  # not the body cache's answer
    assert (status, code) == (422, "too_much_work") and "3" in message and "2" in message
