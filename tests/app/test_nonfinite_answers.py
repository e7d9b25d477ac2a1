"""Issue 40, failure 7 at serving time: a NaN or Inf that arises in a pass (an overflow, with finite weights) is
never shown as 0. It travels as null, like a masked cell, and the tensor says how many such cells it holds
(`nonfinite`), which no finite answer carries."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import torch
from fastapi.testclient import TestClient

from app.factory import create_app
from app.registry import Registry
from app.tensors import decode_tensor, encode_tensor
from tests.app.conftest import make_settings, post, tiny_models


@pytest.fixture(scope="module")
def overflowing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    models = tiny_models()
    registry = Registry(default="gpt")
    registry.add("gpt", models["gpt"], source="test")
    hot = tiny_models()["gpt"]
    with torch.no_grad():
        hot.model.stack.blocks[0].attn.W_Q.weight.fill_(3e38)  # finite, but its scores overflow to inf
    registry.add("hot", hot, source="test")
    with TestClient(create_app(make_settings(tmp_path_factory.mktemp("app")), registry)) as client:
        yield client


def test_an_overflow_in_attention_is_counted_not_zeroed(overflowing: TestClient) -> None:
    answer = post(overflowing, "/api/attention", {"model": "hot", "text": "the cat", "layer": 0})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    pattern = decode_tensor(body["pattern"])
    assert body["pattern"]["nonfinite"] == int(np.isnan(pattern).sum()) > 0
    assert not np.any(pattern == 0.0) or body["pattern"]["nonfinite"]  # never a silent row of zeros
    fine = post(overflowing, "/api/attention", {"model": "gpt", "text": "the cat", "layer": 0}).json()
    for stage in ("raw", "scaled", "masked", "pattern", "q", "k"):  # masked cells (-inf) are not counted
        assert "nonfinite" not in fine[stage], stage
    np.testing.assert_allclose(decode_tensor(fine["pattern"]).sum(-1), 1.0, atol=1e-3)


def test_an_overflow_reaches_the_trace_and_predictions_answer_without_a_500(overflowing: TestClient) -> None:
    trace = post(overflowing, "/api/trace", {"model": "hot", "text": "the cat", "stages": ["blocks.0.*"]})
    assert trace.status_code == 200, trace.text
    counted = {name: stage.get("nonfinite") for name, stage in trace.json()["stages"].items()}
    assert counted["blocks.0.attn.hook_pattern"]
    predict = post(overflowing, "/api/predict", {"model": "hot", "text": "the cat"})
    assert predict.status_code == 422 and predict.json()["error"]["code"] == "nonfinite", predict.text
    assert "not finite numbers" in predict.json()["error"]["message"]


def test_the_count_leaves_masks_alone() -> None:
    scores = torch.tensor([[[0.5, -torch.inf], [torch.nan, torch.inf]]])
    assert encode_tensor("blocks.0.attn.hook_attn_scores", scores, ["batch", "q", "k"])["nonfinite"] == 2
    assert encode_tensor("blocks.0.hook_resid_post", scores, ["batch", "q", "k"])["nonfinite"] == 3
    assert "nonfinite" not in encode_tensor("x", torch.ones(1, 2, 2), ["batch", "q", "k"])
