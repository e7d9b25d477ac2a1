"""POST /api/lab/sampling: seeded draws and the filters."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.app.conftest import error_of, post

TEXT = "the cat sat"


def test_sampling_is_seeded_and_filters(client: TestClient) -> None:
    body = {"model": "gpt", "text": TEXT, "temperature": 0.8, "top_k": 12, "top_p": 0.5, "seed": 3, "draws": 50}
    first, again = post(client, "/api/lab/sampling", body).json(), post(client, "/api/lab/sampling", body).json()
    assert first["draws"] == again["draws"] and len(first["draws"]) == 50
    other = post(client, "/api/lab/sampling", {**body, "seed": 4}).json()
    assert other["draws"] != first["draws"]
    assert first["kept"]["top_k"] == 12 and first["kept"]["final"] <= 12
    allowed = {row["id"] for row in first["rows"] if row["final"] > 0}
    assert set(first["draws"]) <= allowed and sum(first["counts"].values()) == 50
    greedy = post(client, "/api/lab/sampling", {**body, "top_k": 1}).json()
    assert greedy["kept"]["final"] == 1 and set(greedy["draws"]) == {greedy["rows"][0]["id"]}
    status, code, _ = error_of(post(client, "/api/lab/sampling", {"model": "bert", "text": TEXT}))
    assert (status, code) == (422, "not_generative")
    status, code, message = error_of(post(client, "/api/lab/sampling", {"model": "gpt", "text": TEXT, "top_p": 2}))
    assert (status, code) == (422, "invalid_request") and "top_p" in message
