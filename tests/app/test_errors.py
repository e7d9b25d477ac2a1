"""Bad input gets a clear 4xx with {"error": {"code", "message"}}, never a 500, never the text echoed."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from tests.app.conftest import error_of, post

SECRET = "my secret sentence ☂"
ENDPOINTS = ["/api/tokenize", "/api/trace", "/api/attention", "/api/qkv", "/api/activations", "/api/predict"]


@pytest.mark.parametrize("path", ENDPOINTS)
def test_empty_text(client: TestClient, path: str) -> None:
    status, code, message = error_of(post(client, path, {"model": "gpt", "text": ""}))
    assert (status, code) == (422, "empty_text")
    assert message == "The text is empty — type a sentence first."


@pytest.mark.parametrize("path", ENDPOINTS)
def test_text_over_the_character_limit(client: TestClient, path: str) -> None:
    status, code, message = error_of(post(client, path, {"model": "gpt", "text": "a" * 513}))
    assert (status, code) == (422, "text_too_long") and "512 characters" in message


def test_text_over_the_token_limit(client: TestClient) -> None:
    status, code, message = error_of(post(client, "/api/trace", {"model": "gpt", "text": "b" * 60}))
    assert (status, code) == (422, "text_too_long")
    assert "61 tokens" in message and "limit is 48 tokens" in message  # the BOS counts too


def test_target_text_over_the_limit(client: TestClient) -> None:
    body = {"model": "translator", "text": "a", "target_text": "c" * 60}
    status, code, _ = error_of(post(client, "/api/trace", body))
    assert (status, code) == (422, "text_too_long")


@pytest.mark.parametrize("path", ENDPOINTS)
def test_unknown_model_lists_known_ones(client: TestClient, path: str) -> None:
    status, code, message = error_of(post(client, path, {"model": "gpt-5", "text": "hi"}))
    assert (status, code) == (404, "unknown_model") and "gpt, bert, translator" in message


@pytest.mark.parametrize(("path", "body", "valid"), [
    ("/api/attention", {"layer": 2}, "0 to 1"),
    ("/api/attention", {"layer": -1}, "0 to 1"),
    ("/api/attention", {"layer": 0, "head": 4}, "0 to 3"),
    ("/api/qkv", {"layer": 9}, "0 to 1"),
    ("/api/activations", {"layer": 2}, "0 to 1"),
    ("/api/trace", {"layers": [0, 7]}, "0 to 1"),
    ("/api/trace", {"heads": [4]}, "0 to 3"),
])
def test_layer_and_head_out_of_range(client: TestClient, path: str, body: dict[str, object], valid: str) -> None:
    status, code, message = error_of(post(client, path, {"model": "gpt", "text": "hi", **body}))
    assert (status, code) == (422, "out_of_range") and valid in message


def test_decoder_layer_range_of_encoder_decoder(client: TestClient) -> None:
    status, code, message = error_of(post(client, "/api/attention", {"model": "translator", "text": "hi", "layer": 1,
                                                                     "cross": True}))
    assert (status, code) == (422, "out_of_range") and "has 1" in message


def test_cross_attention_on_a_decoder_only_model(client: TestClient) -> None:
    status, code, message = error_of(post(client, "/api/attention", {"model": "gpt", "text": "hi", "cross": True}))
    assert (status, code) == (422, "not_in_model") and "cross-attention" in message


def test_unknown_stage_says_how_to_discover_names(client: TestClient) -> None:
    body = {"model": "gpt", "text": "hi", "stages": ["blocks.9.*"]}
    status, code, message = error_of(post(client, "/api/trace", body))
    assert (status, code) == (422, "unknown_stage") and "/api/models/" in message


def test_body_over_64_kb(client: TestClient) -> None:
    status, code, message = error_of(post(client, "/api/trace", {"text": "x" * (65 * 1024)}))
    assert (status, code) == (413, "body_too_large") and "64 KB" in message


def test_chunked_body_over_64_kb_without_length(client: TestClient) -> None:
    def chunks():  # noqa: ANN202
        for _ in range(70):
            yield b"x" * 1024

    response = client.post("/api/trace", content=chunks(), headers={"content-type": "application/json"})
    assert error_of(response)[:2] == (413, "body_too_large")


@pytest.mark.parametrize("raw", [b"{not json", b"", b'{"text": "a",}', b"\xff\xfe"])
def test_malformed_json(client: TestClient, raw: bytes) -> None:
    response = client.post("/api/trace", content=raw, headers={"content-type": "application/json"})
    status, code, _ = error_of(response)
    assert status == 422 and code in ("invalid_json", "invalid_request")
    if raw == b"{not json":
        assert code == "invalid_json"


@pytest.mark.parametrize("body", [
    {"model": "gpt", "text": SECRET, "encoding": "hex"},
    {"model": "gpt", "text": SECRET, "temperature": 0},
    {"model": "gpt", "text": SECRET, "unexpected": SECRET},
    {"model": "gpt", "text": 12},
    {"model": "gpt"},
    [SECRET],
    {"config": {"n_layers": 99}, "text": SECRET},
    {"config": {"d_model": 2048}, "text": SECRET},
    {"config": {"n_heads": 32}, "text": SECRET},
    {"model": "gpt", "text": "x", SECRET: 1},  # a key the client made up is not repeated back either
    {"model": "gpt", "text": "x", "interventions": {SECRET: 1}},
    {"text": "x", "config": {SECRET: 1}},
])
def test_invalid_requests_never_echo_the_text(client: TestClient, body: object) -> None:
    response = post(client, "/api/predict", body)  # type: ignore[arg-type]
    status, code, message = error_of(response)
    assert (status, code) == (422, "invalid_request")
    assert SECRET not in response.text and "input" not in response.json()["error"]


def test_inline_config_that_cannot_work(client: TestClient) -> None:
    status, code, message = error_of(post(client, "/api/trace", {"config": {"d_model": 30, "n_heads": 4}, "text": "x"}))
    assert (status, code) == (422, "invalid_config") and "divisible" in message
    both = post(client, "/api/trace", {"config": {}, "model": "gpt", "text": "x"})
    assert error_of(both)[:2] == (422, "conflicting_fields")


def test_errors_leave_the_server_working(client: TestClient) -> None:
    post(client, "/api/trace", {"model": "gpt", "text": "\ud800" * 600})
    assert client.get("/api/health").status_code == 200
    assert post(client, "/api/trace", {"model": "gpt", "text": "still here"}).status_code == 200


def test_a_from_scratch_model_over_the_parameter_budget_is_refused_before_it_is_built(client: TestClient) -> None:
    config = {"architecture": "encoder-decoder", "d_model": 1024, "n_layers": 12, "n_decoder_layers": 12,
              "n_heads": 16, "d_mlp": 4096}
    service = client.app.state.service  # type: ignore[attr-defined]
    built = len(service.models.inline_models)
    status, code, message = error_of(post(client, "/api/trace", {"config": config, "text": "hi"}))
    assert (status, code) == (422, "model_too_large") and "25,000,000" in message
    assert len(service.models.inline_models) == built


def test_an_answer_over_the_cell_budget_names_the_limit_and_the_filters(tmp_path) -> None:  # noqa: ANN001
    from app.factory import create_app
    from tests.app.conftest import make_registry, make_settings

    settings = make_settings(tmp_path, max_response_cells=5_000)
    with TestClient(create_app(settings, make_registry())) as small:
        request = {"model": "gpt", "text": "a sentence of some length", "stages": ["*"]}
        status, code, message = error_of(post(small, "/api/trace", request))
        assert (status, code) == (422, "response_too_large") and "5,000" in message and "`stages`" in message
        for path, body in [("/api/attention", {"layer": 0}), ("/api/qkv", {"layer": 0}), ("/api/activations", {})]:
            assert error_of(post(small, path, {"model": "gpt", "text": "a sentence of some length", **body}))[1] == (
                "response_too_large")
        narrowed = post(small, "/api/trace", {**request, "stages": ["blocks.0.attn.hook_pattern"], "heads": [0]})
        assert narrowed.status_code == 200


@pytest.mark.parametrize(("body", "code", "says"), [
    ({"model": "gpt", "text": "x", "stages": ["blocks.0.attn.hook_q", SECRET]}, "unknown_stage", "`stages[1]`"),
    ({"model": "gpt", "text": "x", "layers": [10**300]}, "out_of_range", "a huge number"),
    ({"model": "gpt", "text": "x", "heads": [-(10**50)]}, "out_of_range", "a huge negative number"),
    ({"model": "gpt", "text": "x", "interventions": {"ablate_heads": [[10**40, 0]]}}, "invalid_intervention",
     "a huge number"),
])
def test_errors_point_at_the_field_and_never_repeat_what_was_sent(client: TestClient, body: dict[str, object],
                                                                  code: str, says: str) -> None:
    response = post(client, "/api/trace", body)
    assert error_of(response)[1] == code and says in error_of(response)[2]
    assert SECRET not in response.text and "0" * 30 not in response.text


def test_a_stage_pattern_is_bounded_so_matching_it_is_cheap(client: TestClient) -> None:
    """fnmatch's translation of '[[[...' grows with the square of its length: 15,000 characters held the
    event loop for 8 s. Patterns are at most 128 characters, and the longest allowed one matches at once."""
    started = time.perf_counter()
    too_long = post(client, "/api/trace", {"model": "gpt", "text": "x", "stages": ["[" * 15000]})
    assert error_of(too_long)[:2] == (422, "invalid_request") and "stages[0]" in error_of(too_long)[2]
    longest = post(client, "/api/trace", {"model": "gpt", "text": "x", "stages": ["[" * 128] * 64})
    assert error_of(longest)[1] == "unknown_stage"
    assert time.perf_counter() - started < 2.0
    for name in client.app.state.service.registry.names():  # type: ignore[attr-defined]
        stages = client.get(f"/api/models/{name}").json()["stages"]
        assert max(len(stage["name"]) for stage in stages) <= 128


@pytest.mark.parametrize(("raw", "says"), [
    (b"", "The request body is empty"),
    (b'"just a string"', "is not a JSON object"),
    (b"[" * 20000 + b"]" * 20000, "could not be read as JSON"),
])
def test_a_body_that_is_not_an_object_says_what_to_send(client: TestClient, raw: bytes, says: str) -> None:
    response = client.post("/api/trace", content=raw, headers={"content-type": "application/json"})
    assert error_of(response)[0] == 422 and says in error_of(response)[2]


def test_method_not_allowed_names_the_method_to_use_and_slashes_are_not_redirected(client: TestClient) -> None:
    status, code, message = error_of(client.put("/api/trace"))
    assert (status, code) == (405, "method_not_allowed") and "POST" in message
    assert client.get("/api/health/", follow_redirects=False).status_code == 404  # no Location from the Host
    assert client.head("/api/health").status_code == 200
