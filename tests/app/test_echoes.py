"""No silent truncation: every number an answer echoes (length, draws, counts, shapes) equals what it holds.

Run over every request of tests/app/record_answers.py (each endpoint at least once) and a few
that used to be cut: each tensor's `shape` matches its data and its `dims`; each request field the
answer echoes under the same name holds the request's value; lists the request sizes have that size.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.tensors import decode_tensor
from tests.app.conftest import error_of, post
from tests.app.record_answers import GPT, REQUESTS, label

EXTRA: list[tuple[str, str, dict[str, Any]]] = [
    ("POST", "/api/lab/sampling", {**GPT, "draws": 3000, "seed": 1}),  # > the old 200 cut, every id counted
    ("GET", "/api/positional-encoding", {"model": "bert", "kind": "learned", "length": 64}),
    ("POST", "/api/predict", {**GPT, "top_k": 40, "sample_top_k": 7, "top_p": 0.5, "seed": 4, "max_new_tokens": 5}),
    ("GET", "/api/lab/kv-cache-size", {"batch": 3}),
]
SIZED = {"draws": "draws", "draw_text": "draws"}  # answer list -> the request field that sizes it


def answer(client: TestClient, method: str, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    response = client.get(path, params=body) if method == "GET" else post(client, path, body)
    return response.status_code, response.json()


def tensors(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        if {"dims", "shape", "data"} <= set(value):
            return [value]
        return [t for v in value.values() for t in tensors(v)]
    if isinstance(value, list):
        return [t for v in value for t in tensors(v)]
    return []


@pytest.mark.parametrize(("method", "path", "body"), REQUESTS + EXTRA, ids=[label(*r) for r in REQUESTS + EXTRA])
def test_echoed_numbers_equal_what_the_answer_holds(
    client: TestClient, method: str, path: str, body: dict[str, Any]
) -> None:
    status, out = answer(client, method, path, body)
    if status != 200:
        return  # refusals: tests/app/test_errors.py and the recorded answers pin them
    for tensor in tensors(out):
        data = decode_tensor(tensor)
        assert list(data.shape) == tensor["shape"] and len(tensor["dims"]) == len(tensor["shape"]), tensor["name"]
    for field, value in body.items():
        if field in out and not isinstance(out[field], list | dict) and field not in ("text", "target_text"):
            assert out[field] == value, (field, out[field], value)
    for listed, sizer in SIZED.items():
        if listed in out and sizer in body:
            assert len(out[listed]) == body[sizer], listed
    if "counts" in out and "draws" in out:
        assert sum(out["counts"].values()) == len(out["draws"])
    if path == "/api/positional-encoding":
        for tensor in out["tensors"].values():
            for dim, size in zip(tensor["dims"], tensor["shape"], strict=True):
                if dim in ("pos", "q_pos", "k_pos"):
                    assert size == out["length"], (tensor["name"], dim, size)
        assert out["d_head"] * out["n_heads"] == out["d_model"]
        if "table" in out["tensors"]:
            assert out["tensors"]["table"]["shape"][1] == out["d_model"]
    if path == "/api/predict":
        assert len(out["top_k"]) == body.get("top_k", 10)
        assert math.isclose(sum(r["prob"] for r in out["top_k"]) + out["rest_prob"], 1.0, abs_tol=1e-4)
        sampling = out["sampling"]
        assert len(sampling["ids"]) == len(sampling["probs"]) == min(sampling["kept"], body.get("sample_rows", 100))
        assert math.isclose(sum(sampling["probs"]) + sampling["unlisted_prob"], 1.0, abs_tol=1e-6)
    if path == "/api/lab/kv-cache-size":
        rows = out["published"] + [row for model in out["models"] for row in model["variants"]]
        for row in rows:
            per = 2 * row["layers"] * row["kv_heads"] * row["d_head"] * out["bytes_per_value"]
            assert row["bytes_per_token"] == per and row["total_bytes"] == per * row["cached_positions"] * out["batch"]
    if path == "/api/lab/sampling":
        assert out["kept"]["final"] >= len({int(i) for i in out["counts"]})
        assert np.all(np.diff([r["original"] for r in out["rows"]]) <= 0)


def test_learned_positions_past_the_table_are_refused_naming_its_size(client: TestClient) -> None:
    response = client.get("/api/positional-encoding", params={"model": "bert", "kind": "learned", "length": 65})
    status, code, message = error_of(response)
    assert (status, code) == (422, "beyond_context") and "n_ctx = 64" in message
    response = client.get("/api/positional-encoding", params={"model": "bert", "kind": "learned", "d_model": 16})
    status, code, message = error_of(response)
    assert (status, code) == (422, "conflicting_fields") and "d_model 32" in message
