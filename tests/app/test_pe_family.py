"""The positional-encoding family in the API: shipped pe-* folders are registered like any weights
folder, GET /api/models lists them after the other models (the default stays the default), and each
member's meta carries the family table the lab draws."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from app.catalogue import build_registry
from app.factory import create_app
from tests.app.conftest import make_settings, tiny_models
from tests.browser.pe_models import POSITIONS, TABLE, write_pe_family


def test_pe_family_members_are_listed_after_the_other_models(tmp_path: Path) -> None:
    weights = tmp_path / "weights"
    write_pe_family(weights)
    registry = build_registry(make_settings(tmp_path, weights_dir=weights))  # every folder with a config.json
    for name, loaded in tiny_models().items():
        registry.add(name, loaded, source="test")
    with TestClient(create_app(make_settings(tmp_path, weights_dir=weights), registry)) as client:
        listed = client.get("/api/models").json()
        names = [m["name"] for m in listed]
        assert set(POSITIONS) <= set(names)
        assert names[:3] == ["gpt", "bert", "translator"]  # the family comes after the lone models
        assert [n for n in names if n.startswith("pe-")] == sorted(POSITIONS)  # in registry order
        assert [m["name"] for m in listed if m["default"]] == ["gpt"]
        assert client.get("/api/health").json()["default"] == "gpt"
        rope = client.get("/api/models/pe-rope").json()
        assert rope["meta"]["pe_family"] == TABLE
        assert rope["config"]["pos_encoding"] == "rope"
        learned = client.get("/api/models/pe-learned").json()
        assert learned["config"]["n_ctx"] == TABLE["members"][1]["trained_context"]
        assert client.get("/api/models/pe-rope-window").json()["config"]["sliding_window"] == 8


def test_without_the_family_the_order_is_the_registry_order(client: TestClient) -> None:
    names = [m["name"] for m in client.get("/api/models").json()]
    assert names == ["gpt", "bert", "translator"]
    assert all("pe_family" not in m["meta"] for m in client.get("/api/models").json())
