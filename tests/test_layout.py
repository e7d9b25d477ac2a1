"""The packages keep one direction of imports and one home for each kind of code.

model/        the Transformer and the RNN it replaced (no optimizer, no file format, no experiment, no web)
analysis/     what is read off a trace            -> model
checkpoints/  weights in and out                  -> model, analysis (head labels for packaged models)
optimization/ the one train loop                  -> model (below lab and training, which both train through it)
lab/          one module per experiment           -> model, analysis, checkpoints, optimization
training/     what makes weights                  -> model, analysis, checkpoints, optimization
lessons/      the chapters, claim kinds, wording  -> model, analysis, checkpoints, optimization, lab
classroom/    a class session's database           -> nothing of the project (the questions' check is handed in)
app/          the web service                     -> all of the above but training
static_site/  the lessons as a recorded static site -> all of the above but training
transformer_explorer/  the command line (and, later, the Python API) -> everything

Imports anywhere in a file count (inside functions too): a lazy import is still an edge of the graph.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("model", "analysis", "checkpoints", "optimization", "lab", "training", "lessons", "classroom", "app",
            "static_site", "transformer_explorer")
MAY_IMPORT: dict[str, set[str]] = {
    "model": {"model"},
    "analysis": {"model", "analysis"},
    "checkpoints": {"model", "analysis", "checkpoints"},
    "optimization": {"model", "optimization"},
    "lab": {"model", "analysis", "checkpoints", "optimization", "lab"},
    "training": {"model", "analysis", "checkpoints", "optimization", "training"},
    "lessons": {"model", "analysis", "checkpoints", "optimization", "lab", "lessons"},
    "classroom": {"classroom"},
    "app": {"model", "analysis", "checkpoints", "optimization", "lab", "lessons", "classroom", "app"},
    "static_site": {"model", "analysis", "checkpoints", "optimization", "lab", "lessons", "classroom", "app",
                    "static_site"},
    "transformer_explorer": set(PACKAGES),
}
FORBIDDEN_IN_MODEL = ("torch.optim", "fastapi", "starlette", "safetensors", "gguf")  # no training, web or file format
OPTIMIZER_NAMES = {"Adam", "AdamW", "SGD", "RMSprop", "Adagrad", "Optimizer", "lr_scheduler"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def imports_of(path: Path) -> set[str]:
    """Project modules a file imports, at any depth; `from pkg import mod` counts as pkg.mod when mod is a module."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            continue
        found |= {name for name in names if name in MODULES}
    return found


GRAPH = {name: imports_of(path) - {name} for name, path in MODULES.items()}


def test_no_import_circle() -> None:
    """Depth-first search over the whole graph; a back edge is a circle, printed as the path that closes it."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []
    circles: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for target in sorted(GRAPH[node]):
            if state.get(target) == 1:
                circles.append(" -> ".join([*path[path.index(target):], target]))
            elif target not in state:
                visit(target)
        path.pop()
        state[node] = 2

    for node in sorted(GRAPH):
        if node not in state:
            visit(node)
    assert not circles, circles


@pytest.mark.parametrize("package", PACKAGES)
def test_imports_point_one_way(package: str) -> None:
    wrong = []
    for name, targets in GRAPH.items():
        if name.split(".")[0] != package:
            continue
        file = MODULES[name].relative_to(ROOT).as_posix()
        for target in targets:
            top = target.split(".")[0]
            if top not in MAY_IMPORT[package]:
                wrong.append(f"{file} imports {target}")
    assert not wrong, wrong


def test_the_lab_does_not_build_on_the_explorers_answers() -> None:
    """app/lab/ and app/answers/ are peers: what both check (stack, layer, heads, budget) is app/request_checks.py."""
    lab = [name for name in GRAPH if name == "app.lab" or name.startswith("app.lab.")]
    wrong = sorted(f"{name} imports {target}" for name in lab for target in GRAPH[name]
                   if target == "app.answers" or target.startswith("app.answers."))
    assert lab and not wrong, wrong


def test_model_builds_no_optimizer_and_serves_no_web() -> None:
    offenders = []
    for path in sorted((ROOT / "model").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom | ast.Import):
                names = [a.name for a in node.names]
                if isinstance(node, ast.ImportFrom) and node.module:
                    names.append(node.module)
                for name in names:
                    if name.startswith(FORBIDDEN_IN_MODEL) or name in OPTIMIZER_NAMES:
                        offenders.append(f"{path.name}: {name}")
            if isinstance(node, ast.Attribute) and node.attr == "optim":  # torch.optim.AdamW(...) written out
                offenders.append(f"{path.name}: line {node.lineno} uses .optim")
    assert not offenders, offenders


def test_no_file_is_named_after_a_milestone() -> None:
    # a model family's module and its parity test are named as the files name the family (gpt2, qwen3,
    # test_starcoder2.py): a digit there is no milestone
    families = {p.stem for p in (ROOT / "checkpoints" / "families").glob("*.py")}
    named = [p.relative_to(ROOT).as_posix() for p in ROOT.glob("**/*.py")
             if ".venv" not in p.parts and any(ch.isdigit() for ch in p.stem.split("_")[-1]) and p.stem != "__init__"
             and p.stem.removeprefix("test_") not in families]
    assert not named, named


def test_no_source_file_is_too_long_to_read_in_one_sitting() -> None:
    sources = [p for pkg in (*PACKAGES, "tests", "bench") for p in (ROOT / pkg).rglob("*.py")]
    sources += list((ROOT / "static" / "js").rglob("*.js"))
    lengths = {str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines()) for p in sources}
    too_long = {name: n for name, n in lengths.items() if n > 400}
    assert not too_long, too_long


def test_one_sampler() -> None:
    """Every random draw of a token goes through model/generate.py (the one sampler)."""
    drawing = sorted(p.relative_to(ROOT).as_posix() for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")
                     if "multinomial" in p.read_text(encoding="utf-8"))
    assert drawing == ["model/generate.py"], drawing


def test_one_train_loop() -> None:
    """Every optimizer step, in training/ and in the lab, is taken by optimization/loop.py (the one train loop)."""
    stepping = sorted(p.relative_to(ROOT).as_posix() for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")
                      if ".step()" in p.read_text(encoding="utf-8"))
    assert stepping == ["optimization/loop.py"], stepping


def test_the_architecture_document_names_every_module() -> None:
    """docs/ARCHITECTURE.md is the map a newcomer reads first: every module of every package is on it."""
    doc = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    missing = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            stem = path.parent.name if path.name == "__init__.py" else path.stem
            if path.name == "__init__.py" and path.parent == ROOT / package:
                continue  # the package itself is a heading of the map
            if path.parent == ROOT / "checkpoints" / "families" and path.stem != "records":
                continue  # one module per model family: their list is docs/MODELS.md's table (tests/test_recipes.py)
            if not re.search(rf"(?<!\w){re.escape(stem)}(?!\w)", doc):
                missing.append(str(path.relative_to(ROOT)))
    assert not missing, f"docs/ARCHITECTURE.md does not name: {missing}"
