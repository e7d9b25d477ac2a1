"""Every endpoint is one record run one way (app/pipeline.py, Service.run): its route comes from the record, the
text's length is checked before the model is looked up, one cache key, and an unseeded prediction is never kept."""

from __future__ import annotations

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from app.endpoints import ENDPOINTS, EXPLORER, LESSON_CLAIMS
from app.lab import EXPERIMENTS, RENAMED
from app.pipeline import answer_key
from app.resolve import Resolved
from app.routers import explorer, health, lab, lessons
from app.schemas import TraceRequest
from tests.app.conftest import error_of, post

# the routes that list what the server offers, written out: no model, no record
# routes that run no model: listings, and a chapter's share card (its link and QR code)
CATALOGUE = {("GET", "/api/health"), ("GET", "/api/lessons"), ("GET", "/api/lab/experiments"),
             ("GET", "/api/lessons/{chapter}/share")}
TOO_LONG = {"model": "no-such-model", "text": "a" * 513}


def asks_a_text_alone(endpoint) -> bool:  # noqa: ANN001
    try:
        return endpoint.uses_for(endpoint.request.model_validate(TOO_LONG)) == "text"
    except ValueError:  # it needs more than a text (a second prompt, a token)
        return False


TEXT_ENDPOINTS = [e for e in (*EXPLORER, *EXPERIMENTS) if asks_a_text_alone(e)]


def test_every_api_route_is_a_records_or_a_listing() -> None:
    routed = {(method, r.path): r for module in (health, explorer, lab, lessons) for r in module.router.routes
              if isinstance(r, APIRoute) for method in r.methods or ()}
    records = {(e.method, e.route): e for e in ENDPOINTS}
    # a renamed experiment's old route answers through the same record (deprecated)
    renamed = {(e.method, "/api/lab/" + old.replace("_", "-")) for old, e in RENAMED.items()}
    assert set(routed) == set(records) | CATALOGUE | renamed
    for where in renamed:
        assert routed[where].deprecated
    for where, endpoint in records.items():
        route = routed[where]
        assert (route.name, route.description, route.tags) == (endpoint.name, endpoint.summary, [endpoint.tag])
        if endpoint is not LESSON_CLAIMS:  # its route makes the chapter's view (Service.lesson_claims)
            assert route.response_model is endpoint.response


@pytest.mark.parametrize("endpoint", TEXT_ENDPOINTS, ids=lambda e: e.name)
def test_a_texts_length_is_checked_before_the_model_is_looked_up(client: TestClient, endpoint) -> None:
    response = (client.get(endpoint.route, params=TOO_LONG) if endpoint.method == "GET"
                else client.post(endpoint.route, json=TOO_LONG))
    status, code, _ = error_of(response)
    assert (status, code) == (422, "text_too_long"), endpoint.name


def test_an_unseeded_prediction_is_drawn_afresh_and_never_cached(client: TestClient) -> None:
    bodies = client.app.state.service.engine.bodies  # type: ignore[attr-defined]
    request = {"model": "gpt", "text": "an unseeded draw", "max_new_tokens": 8, "temperature": 2.0}
    before = len(bodies)
    seeds = {post(client, "/api/predict", request).json()["generated"]["seed"] for _ in range(3)}
    assert len(bodies) == before and len(seeds) > 1
    post(client, "/api/predict", {**request, "seed": 5})
    assert len(bodies) == before + 1  # a seeded one is kept


def test_one_cache_key_names_the_endpoint_the_model_and_the_rest_of_the_request(client: TestClient) -> None:
    loaded = client.app.state.service.registry.get("gpt")  # type: ignore[attr-defined]
    trace = next(e for e in EXPLORER if e.name == "trace")
    at_step = Resolved("gpt@3", "gpt", loaded)
    request = TraceRequest.model_validate({"model": "gpt", "snapshot": 3, "text": "hi"})
    key = answer_key(trace, request, at_step, [], "cpu")
    # the model's key stands for model, config and snapshot; the other fields decide the rest
    assert key == answer_key(trace, TraceRequest.model_validate({"text": "hi", "snapshot": 3}), at_step, [], "cpu")
    assert key != answer_key(trace, TraceRequest.model_validate({"text": "hi", "top_k": 2}), at_step, [], "cpu")
    assert key != answer_key(trace, request, Resolved("gpt", "gpt", loaded), [], "cpu")
    assert key != answer_key(EXPLORER[0], request, at_step, [], "cpu")
