"""One list of lab experiments (app/lab/__init__.py: EXPERIMENTS) drives the routes, the page, the JSON list the
page's script reads and the JS panel index; each experiment has its app/lab/<name>.py and lab/<name>.py."""

from __future__ import annotations

import re
from pathlib import Path

from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from app.lab import EXPERIMENTS
from app.lab_panels import lab_panel_names
from app.routers import lab as lab_router

ROOT = Path(__file__).resolve().parents[2]
PAGE_ONLY = {"interventions", "compare"}  # panels that read /api/trace, not an experiment


def test_each_experiment_has_one_route_and_nothing_else_is_routed() -> None:
    routed = {(r.path, method) for r in lab_router.router.routes if isinstance(r, APIRoute)
              for method in r.methods or ()}
    listed = {(e.route, e.method) for e in EXPERIMENTS}
    assert routed == listed | {("/api/lab/experiments", "GET")}
    assert len({e.name for e in EXPERIMENTS}) == len({e.panel for e in EXPERIMENTS}) == len(EXPERIMENTS)


def test_each_experiment_has_its_modules_by_the_same_name() -> None:
    names = {e.name for e in EXPERIMENTS}
    modules = {p.stem for p in (ROOT / "app" / "lab").glob("*.py")} - {"__init__", "common"}
    assert modules == names, "every app/lab module is an experiment in EXPERIMENTS, and each has one"
    missing = sorted(name for name in names if not (ROOT / "lab" / f"{name}.py").is_file())
    assert not missing, f"no lab/<name>.py for {missing}"


def test_the_api_lists_the_experiments_for_the_page(client: TestClient) -> None:
    listed = client.get("/api/lab/experiments").json()
    assert [e["name"] for e in listed] == [e.name for e in EXPERIMENTS]
    assert [(e["path"], e["method"], e["panel"]) for e in listed] == [(e.route, e.method, e.panel) for e in EXPERIMENTS]
    schema = client.get("/openapi.json").json()["paths"]
    for experiment in EXPERIMENTS:
        assert experiment.method.lower() in schema[experiment.route], experiment.route


def test_the_page_shows_a_panel_per_experiment_in_the_lists_order(client: TestClient) -> None:
    html = client.get("/lab").text
    shown = re.findall(r'<section id="panel-[^"]*"[^>]* data-panel="([^"]+)"', html)
    assert shown == lab_panel_names()
    assert [p for p in shown if p not in PAGE_ONLY] == [e.panel for e in EXPERIMENTS]


def test_every_panel_has_its_module_and_every_module_a_panel() -> None:
    # static/js/lab/panels/index.js imports panels/<name>.js by the page's panel name: no list to keep
    folder = ROOT / "static" / "js" / "lab" / "panels"
    # a panel's module exports it by default; the other files there are helpers some panels import
    panels = {path.stem for path in folder.glob("*.js") if "export default {" in path.read_text(encoding="utf-8")}
    assert panels == set(lab_panel_names())
