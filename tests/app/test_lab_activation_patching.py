"""POST /api/lab/activation-patching: the plain runs are /api/trace's, patching nothing scores 0 and the whole
residual stream 1, a residual cell before the changed token scores 0; and every refusal says why: unequal token
counts (both shown), an answer of several tokens, the same answer twice, too many forward passes (the cost and
the limit), an encoder and an encoder-decoder."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.app.conftest import error_of, post, trace_logits

ROUTE = "/api/lab/activation-patching"
BODY = {"model": "gpt", "text": "the cat sat", "corrupted": "the bat sat"}


def test_every_grid_with_its_checks_and_the_plain_runs_of_the_trace(client: TestClient) -> None:
    out = post(client, ROUTE, {**BODY, "grid": "all"}).json()
    n = len(out["clean_tokens"])
    assert n == len(out["corrupted_tokens"]) == 12  # the start token and 11 characters
    assert [g["name"] for g in out["grids"]] == ["residual", "attention", "ffn", "heads"]
    for grid in out["grids"]:
        assert len(grid["scores"]) == 2 and all(len(row) == (4 if grid["name"] == "heads" else n)
                                                for row in grid["scores"])
        assert grid["seconds"] >= 0
    assert abs(out["checks"]["nothing"]) <= 1e-4 and abs(out["checks"]["whole_residual"] - 1) <= 1e-4
    residual = out["grids"][0]["scores"]
    assert all(abs(v) <= 1e-4 for row in residual for v in row[:5])  # "<bos>the " before "cat"/"bat"
    assert abs(residual[0][5] - 1) <= 1e-4  # the changed character at the first layer's input: everything
    good, bad = out["clean_answer"], out["corrupted_answer"]
    assert not good["given"] and not bad["given"] and good["id"] != bad["id"]
    clean = trace_logits(client, {"model": "gpt", "text": BODY["text"]})[-1]
    corrupted = trace_logits(client, {"model": "gpt", "text": BODY["corrupted"]})[-1]
    assert good["id"] == int(clean.argmax())
    assert abs(out["clean_diff"] - (clean[good["id"]] - clean[bad["id"]])) <= 1e-4
    assert abs(out["corrupted_diff"] - (corrupted[good["id"]] - corrupted[bad["id"]])) <= 1e-4
    knock = out["knockout"]
    assert knock["ablation"] == "zero" and len(knock["probs"]) == 2 and 0 <= min(knock["probs"]) <= 1
    assert out["forwards"] == 3 * 2 * n + 2 * 4 + 4 * 2 + 2


def test_answers_given_as_text(client: TestClient) -> None:
    out = post(client, ROUTE, {**BODY, "grid": "ffn", "clean_answer": "s", "corrupted_answer": "x",
                               "knockout": False}).json()
    assert (out["clean_answer"]["text"], out["corrupted_answer"]["text"]) == ("s", "x")
    assert out["clean_answer"]["given"] and out["knockout"] is None
    assert [g["name"] for g in out["grids"]] == ["ffn"]


def test_refusals_say_why(client: TestClient) -> None:
    status, code, message = error_of(post(client, ROUTE, {**BODY, "corrupted": "the bats sat"}))
    assert (status, code) == (422, "invalid_option") and "12 tokens" in message and "13" in message
    status, code, message = error_of(post(client, ROUTE, {**BODY, "clean_answer": " Paris"}))
    assert (status, code) == (422, "invalid_option") and "6 tokens" in message and "exactly one token" in message
    status, code, message = error_of(post(client, ROUTE, {**BODY, "clean_answer": "s", "corrupted_answer": "s"}))
    assert (status, code) == (422, "invalid_option") and "same token" in message
    long = {**BODY, "text": "a" * 40, "corrupted": "b" * 40, "grid": "all"}
    status, code, message = error_of(post(client, ROUTE, long))
    assert (status, code) == (422, "too_much_work") and "264 forward passes" in message and "146" in message
    status, code, message = error_of(post(client, ROUTE, {**BODY, "model": "bert"}))
    assert (status, code) == (422, "not_in_model") and "encoder" in message
    status, code, message = error_of(post(client, ROUTE, {**BODY, "model": "translator"}))
    assert (status, code) == (422, "not_in_model") and "encoder-decoder" in message
    status, code, _ = error_of(post(client, ROUTE, {**BODY, "corrupted": ""}))
    assert (status, code) == (422, "empty_text")
    # the same prompt twice: both runs give one logit difference, so 0 and 1 are the same point (was a 500)
    status, code, message = error_of(post(client, ROUTE, {**BODY, "corrupted": BODY["text"], "grid": "ffn"}))
    assert (status, code) == (422, "invalid_option") and "cannot be told apart" in message
