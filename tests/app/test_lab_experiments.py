"""One list of lab experiments (app/lab/__init__.py: EXPERIMENTS) drives the routes, the page, the JSON list and
the JS panels, all under one name per experiment: its app/lab/<name>.py and lab/<name>.py, its panel
static/js/lab/panels/<name>.js, its route /api/lab/<name-in-kebab-case>; the families it declares it refuses are
exactly those its route answers with a 422."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from app.lab import EXPERIMENTS, RENAMED
from app.lab.common import FAMILIES, Experiment
from app.lab_panels import lab_panel_names
from app.routers import lab as lab_router

ROOT = Path(__file__).resolve().parents[2]
PAGE_ONLY = {"interventions", "compare"}  # panels that read /api/trace, not an experiment
MODEL_OF = {"decoder": "gpt", "encoder": "bert", "encoder-decoder": "translator"}  # tests/app/conftest.py's models
# experiments that need a kind of layer none of those models has, and the reason they are refused with:
# nope_attention needs NoPE layers (tests/app/test_lab_nope_attention.py runs it on a SmolLM3-shaped model)
LACKING = {"nope_attention": "no_nope_layers"}


def test_each_experiment_has_one_route_at_its_name_and_nothing_else_is_routed() -> None:
    routed = {(r.path, method) for r in lab_router.router.routes if isinstance(r, APIRoute)
              for method in r.methods or ()}
    listed = {(e.route, e.method) for e in EXPERIMENTS}
    old = {(f"/api/lab/{name.replace('_', '-')}", e.method) for name, e in RENAMED.items()}
    assert routed == listed | old | {("/api/lab/experiments", "GET")}
    names = [e.name for e in EXPERIMENTS]
    assert len(set(names)) == len(names) and all(re.fullmatch(r"[a-z]+(_[a-z]+)*", n) for n in names)
    assert [e.route for e in EXPERIMENTS] == [f"/api/lab/{n.replace('_', '-')}" for n in names]
    # an older panel name opens one panel only, and is no experiment's name
    aliases = [a for e in EXPERIMENTS for a in e.aliases]
    assert len(set(aliases)) == len(aliases) and not set(aliases) & set(lab_panel_names())


def test_each_experiment_has_its_modules_by_the_same_name() -> None:
    names = {e.name for e in EXPERIMENTS}
    modules = {p.stem for p in (ROOT / "app" / "lab").glob("*.py")} - {"__init__", "common"}
    assert modules == names, "every app/lab module is an experiment in EXPERIMENTS, and each has one"
    missing = sorted(name for name in names if not (ROOT / "lab" / f"{name}.py").is_file())
    assert not missing, f"no lab/<name>.py for {missing}"


def test_the_api_lists_the_experiments(client: TestClient) -> None:
    listed = client.get("/api/lab/experiments").json()
    assert listed == [{"name": e.name, "path": e.route, "method": e.method, "summary": e.summary,
                       "refuses": list(e.refuses), "aliases": list(e.aliases)} for e in EXPERIMENTS]
    schema = client.get("/openapi.json").json()["paths"]
    for experiment in EXPERIMENTS:
        assert experiment.method.lower() in schema[experiment.route], experiment.route


def test_the_page_shows_a_panel_per_experiment_with_where_it_asks(client: TestClient) -> None:
    html = client.get("/lab").text
    shown = re.findall(r'<section id="panel-[^"]*"[^>]* data-panel="([^"]+)"', html)
    assert shown == lab_panel_names()
    assert [p for p in shown if p not in PAGE_ONLY] == [e.name for e in EXPERIMENTS]
    for experiment in EXPERIMENTS:
        section = re.search(rf'<section id="panel-{experiment.name}"[^>]*>', html)
        assert section, experiment.name
        tag = section.group(0)
        assert f'data-path="{experiment.route}"' in tag and f'data-method="{experiment.method}"' in tag, tag
        assert f'data-refuses="{" ".join(experiment.refuses)}"' in tag, tag
    for page_only in PAGE_ONLY:
        assert "data-path" not in re.search(rf'<section id="panel-{page_only}"[^>]*>', html).group(0)  # type: ignore[union-attr]


@pytest.mark.parametrize("experiment", [e for e in EXPERIMENTS if e.aliases], ids=lambda e: e.name)
def test_an_older_panel_name_opens_the_panel(client: TestClient, experiment: Experiment) -> None:
    for alias in experiment.aliases:
        html = client.get(f"/lab?panel={alias}").text
        visible = re.findall(r'<section id="panel-(\w+)"[^>]*>', html)
        shown = [name for name, tag in zip(visible, re.findall(r'<section id="panel-\w+"[^>]*>', html), strict=True)
                 if " hidden" not in tag]
        assert shown == [experiment.name], (alias, shown)


def test_every_panel_has_its_module_and_every_module_a_panel() -> None:
    # static/js/lab/panels/index.js imports panels/<name>.js by the page's panel name: no list to keep
    folder = ROOT / "static" / "js" / "lab" / "panels"
    # a panel's module exports it by default; the other files there are helpers some panels import
    panels = {path.stem for path in folder.glob("*.js") if "export default {" in path.read_text(encoding="utf-8")}
    assert panels == set(lab_panel_names())


def request_of(experiment: Experiment, model: str) -> dict[str, object]:
    """The smallest request naming `model` (with a sentence when the experiment reads one, and a second sentence of
    as many characters for each other text it requires, as activation_patching's corrupted prompt)."""
    fields = experiment.request.model_fields
    others = {name: "ac" for name, field in fields.items() if field.is_required() and name != "text"}
    return {"model": model, **({"text": "ab"} if "text" in fields else {}), **others}


@pytest.mark.parametrize("experiment", [e for e in EXPERIMENTS if not e.measured and e.uses != "nothing"],
                         ids=lambda e: e.name)
def test_an_experiment_refuses_exactly_the_families_it_declares(client: TestClient, experiment: Experiment) -> None:
    for family in FAMILIES:
        body = request_of(experiment, MODEL_OF[family])
        response = (client.get(experiment.route, params=body) if experiment.method == "GET"
                    else client.post(experiment.route, json=body))
        if family in experiment.refuses:
            assert response.status_code == 422, (family, response.text[:200])
            assert response.json()["error"]["code"] in {"not_generative", "not_in_model"}, response.text[:200]
        elif experiment.name in LACKING:  # refused for what no model here has, by name (its own tests answer it)
            assert response.status_code == 422, (family, response.text[:200])
            assert response.json()["error"]["details"]["reason"] == LACKING[experiment.name], response.text[:200]
        else:
            assert response.status_code == 200, (family, response.text[:300])


@pytest.mark.parametrize("old", sorted(RENAMED))
def test_a_renamed_experiment_answers_at_its_old_route_and_opens_by_its_old_name(client: TestClient,
                                                                                   old: str) -> None:
    experiment = RENAMED[old]
    assert old in experiment.aliases and old not in {e.name for e in EXPERIMENTS}
    path = f"/api/lab/{old.replace('_', '-')}"
    body = request_of(experiment, "gpt")

    def ask(route: str) -> object:
        answer = client.get(route, params=body) if experiment.method == "GET" else client.post(route, json=body)
        assert answer.status_code == 200, answer.text[:300]
        return answer.json()

    assert ask(path) == ask(experiment.route)
    operation = client.get("/openapi.json").json()["paths"][path][experiment.method.lower()]
    assert operation["deprecated"] is True and experiment.route in operation["description"]
