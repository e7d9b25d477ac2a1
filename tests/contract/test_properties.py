"""Any Unicode text is valid input: it gets an answer or a typed 4xx, and attention rows always sum to 1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.factory import create_app
from tests.app.conftest import make_registry, make_settings

TYPED_4XX = {"empty_text", "text_too_long"}
# every code point, controls included, and lone surrogates (hypothesis leaves them out; JSON carries them as \\u)
ANY_CHAR = st.one_of(st.characters(min_codepoint=0, max_codepoint=0x10FFFF), st.integers(0xD800, 0xDFFF).map(chr))
ANY_TEXT = st.text(ANY_CHAR, max_size=80)


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    app = create_app(make_settings(Path(tmp_path_factory.mktemp("props"))), make_registry())
    with TestClient(app) as test_client:
        yield test_client


def post(client: TestClient, path: str, body: dict[str, object]):  # noqa: ANN201
    return client.post(path, content=json.dumps(body), headers={"content-type": "application/json"})


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(text=ANY_TEXT, model=st.sampled_from(["gpt", "bert", "translator"]))
def test_any_text_is_answered_or_refused_with_a_typed_4xx(client: TestClient, text: str, model: str) -> None:
    for path in ("/api/tokenize", "/api/trace"):
        response = post(client, path, {"model": model, "text": text})
        if response.status_code != 200:
            assert response.status_code == 422 and response.json()["error"]["code"] in TYPED_4XX, response.text


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(text=ANY_TEXT.filter(lambda t: 0 < len(t) <= 40), model=st.sampled_from(["gpt", "bert", "translator"]),
       layer=st.integers(0, 1))
def test_attention_rows_always_sum_to_one(client: TestClient, text: str, model: str, layer: int) -> None:
    response = post(client, "/api/attention", {"model": model, "text": text, "layer": layer})
    if response.status_code != 200:
        assert response.json()["error"]["code"] in TYPED_4XX
        return
    pattern = torch.tensor(response.json()["pattern"]["data"], dtype=torch.float64)  # [head, q_pos, k_pos]
    torch.testing.assert_close(pattern.sum(-1), torch.ones(pattern.shape[:-1], dtype=torch.float64), atol=2e-3,
                               rtol=0)
