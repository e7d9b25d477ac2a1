"""Every JSON body goes through ApiJSONResponse.render: compact UTF-8, never NaN or Infinity, any string."""

from __future__ import annotations

import json

import numpy as np

from app.errors import ApiJSONResponse


def render(content: object) -> object:
    body = ApiJSONResponse(None).render(content)
    return json.loads(body)  # strict JSON: would refuse NaN / Infinity


def test_numbers_round_trip_and_non_finite_becomes_null() -> None:
    assert render({"x": [0.1234, -2.5e-05, 1e16, float("nan"), float("inf"), None, 3]}) == {
        "x": [0.1234, -2.5e-05, 1e16, None, None, None, 3]
    }
    assert render({"a": np.array([[0.5, 0.25]]), 2: "key"}) == {"a": [[0.5, 0.25]], "2": "key"}


def test_chinese_stays_utf8_and_a_lone_surrogate_still_gives_valid_json() -> None:
    assert ApiJSONResponse(None).render({"t": "我爱北京"}) == '{"t":"我爱北京"}'.encode()
    assert render({"t": "a\ud800b"}) == {"t": "a\ud800b"}
    assert render({"n": 2**70}) == {"n": 2**70}  # past 64 bits: the json fallback
