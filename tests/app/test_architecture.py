"""The layers stay as docs/ARCHITECTURE.md draws them: router -> service -> (resolve, inputs, engine) -> model."""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from pathlib import Path

import pytest
from fastapi.routing import APIRoute

ROOT = Path(__file__).resolve().parents[2]
ROUTERS = sorted((ROOT / "app" / "routers").glob("*.py"))
# pages and docs serve the page and the offline Swagger files: they touch no model
FILE_SERVERS = {"pages.py", "docs.py", "__init__.py"}
BELOW_THE_SERVICE = ("model", "torch", "analysis", "checkpoints", "lab", "app.inference_pool", "app.registry",
                     "app.resolve", "app.tokenizing", "app.answers", "app.request_checks",
                     "app.tensors", "app.cache", "app.catalogue")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", ROUTERS, ids=lambda p: p.name)
def test_routers_reach_nothing_below_the_service(path: Path) -> None:
    below = {m for m in imported_modules(path) if m.startswith(BELOW_THE_SERVICE)}
    assert not below, f"{path.name} imports {sorted(below)}: call the service instead"


def api_routes() -> list[APIRoute]:
    """Every route of the API routers (written out, or generated from a list such as app/lab's EXPERIMENTS)."""
    modules = [importlib.import_module(f"app.routers.{p.stem}") for p in ROUTERS if p.name not in FILE_SERVERS]
    return [r for m in modules for r in m.router.routes if isinstance(r, APIRoute)]


@pytest.mark.parametrize("route", api_routes(), ids=lambda r: f"{sorted(r.methods)[0]} {r.path}")
def test_each_route_is_parse_then_one_service_call(route: APIRoute) -> None:
    tree = ast.parse(textwrap.dedent(inspect.getsource(route.endpoint)))
    handler = tree.body[0]
    assert isinstance(handler, ast.FunctionDef | ast.AsyncFunctionDef)
    body = [s for s in handler.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    assert len(body) == 1 and isinstance(body[0], ast.Return), f"{route.path}: more than one statement"
    call = body[0].value
    call = call.value if isinstance(call, ast.Await) else call
    assert isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute), route.path
    assert isinstance(call.func.value, ast.Name) and call.func.value.id == "service", route.path
