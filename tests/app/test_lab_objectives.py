"""POST /api/lab/objectives: the losses are the cross-entropy of the model's own logits (as /api/trace gives them),
the masked positions follow the seed, the counts follow the formulas, and what cannot run says why."""

from __future__ import annotations

import numpy as np
from fastapi.testclient import TestClient

from tests.app.conftest import error_of, post, trace_logits

TEXT = "the cat sat on the mat"


def log_softmax(x: np.ndarray) -> np.ndarray:
    shifted = x - x.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def test_objectives_losses_are_the_models_cross_entropy_and_the_counts_the_formulas(client: TestClient) -> None:
    body: dict[str, object] = {"model": "gpt", "text": TEXT}
    out = post(client, "/api/lab/objectives", {**body, "seed": 3}).json()
    ids = [t["id"] for t in out["tokens"]]
    n = len(ids)
    assert out["tokens"][0]["start"] == out["tokens"][0]["end"] and n == len(TEXT) + 1  # the start token, then chars
    expected = -log_softmax(trace_logits(client, body))[np.arange(n - 1), ids[1:]]  # [pos - 1]
    assert len(out["causal"]["losses"]) == out["causal"]["signals"] == n - 1
    assert np.abs(np.array(out["causal"]["losses"]) - expected).max() <= 1e-5
    assert abs(out["causal"]["mean"] - expected.mean()) <= 1e-5
    masked = out["masked"]
    assert masked["candidates"] == n - 1 and 0 not in masked["positions"]  # the start token is never masked
    assert len(masked["positions"]) == masked["signals"] == round(0.15 * (n - 1)) == 3
    again = post(client, "/api/lab/objectives", {**body, "seed": 3}).json()["masked"]["positions"]
    others = {tuple(post(client, "/api/lab/objectives", {**body, "seed": s}).json()["masked"]["positions"])
              for s in range(4, 8)}
    assert again == masked["positions"] and len(others | {tuple(again)}) > 1
    span = out["span"]
    assert (span["corrupted"], span["spans"], span["target_length"]) == (3, 1, 4)
    compute = out["compute"]
    assert compute["flops_per_token"] == 2 * compute["non_embedding"] and compute["flops_per_pass"] == 2 * compute[
        "non_embedding"] * n
    rows = {r["objective"]: r for r in out["signals"]}
    assert [rows[k]["signals"] for k in ("causal", "masked", "span")] == [n - 1, 3, 4]
    gen = out["generation"]
    assert gen["new_tokens"][-1] == 32 and gen["cached"][0] == gen["recomputed"][0] == n
    assert gen["cached"][-1] == n + 31 and gen["recomputed"][-1] == 32 * n + 32 * 31 // 2


def test_objectives_refuse_what_they_cannot_measure_in_words_a_student_reads(client: TestClient) -> None:
    status, code, message = error_of(post(client, "/api/lab/objectives", {"model": "bert", "text": TEXT}))
    assert (status, code) == (422, "not_in_model") and "decoder-only" in message and "encoder" in message
    status, code, message = error_of(post(client, "/api/lab/objectives", {"model": "translator", "text": TEXT}))
    assert (status, code) == (422, "not_in_model") and "encoder-decoder" in message
    status, code, message = error_of(post(client, "/api/lab/objectives", {"model": "gpt", "text": "a"}))
    assert (status, code) == (422, "text_too_short") and "at least two" in message
    status, code, message = error_of(post(client, "/api/lab/objectives", {"model": "gpt", "text": TEXT, "seed": -1}))
    assert (status, code) == (422, "invalid_request") and "seed" in message
    status, code, _ = error_of(post(client, "/api/lab/objectives", {"model": "gpt", "text": ""}))
    assert (status, code) == (422, "empty_text")
