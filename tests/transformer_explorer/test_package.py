"""A non-editable install carries what the Python API and its widget need: the wheel holds every file of static/ and
templates/, and, installed alone (--no-deps, the dependencies from this environment), with no server and no
source tree, it traces a sentence into arrays and writes the widget with Plotly and the panels inlined."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ["app", "model", "training", "checkpoints", "analysis", "optimization", "lab", "lessons", "static_site",
            "transformer_explorer", "static", "templates"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, built from a copy of its packages (the build leaves build/ and *.egg-info behind)."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for name in PACKAGES:
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", str(source),
                    "-w", str(out)], check=True, timeout=300)
    return next(out.glob("*.whl"))


def test_the_wheel_holds_the_pages_files(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    tracked = subprocess.run(["git", "ls-files", "static", "templates"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    assert tracked and not [path for path in tracked if path not in names]
    assert "static/js/widget.js" in names and "static/vendor/plotly-cartesian.min.js" in names


def test_installed_alone_it_traces_and_draws_offline(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                   check=True, timeout=300)
    script = """
import app, transformer_explorer
from pathlib import Path
from transformer_explorer import Explorer, show
assert Path(transformer_explorer.__file__).is_relative_to(Path(TARGET)), transformer_explorer.__file__
assert Path(app.__file__).is_relative_to(Path(TARGET)), app.__file__
with Explorer("tiny-gpt") as tiny:
    trace = tiny.trace("The cat sat on the mat.", ["blocks.0.attn.hook_pattern"])
    pattern = trace["blocks.0.attn.hook_pattern"]
    assert pattern.dims == ("head", "q_pos", "k_pos") and str(pattern.values.dtype) == "float32"
    page = show(trace).document
assert "Plotly" in page and "widget.js" in page and len(page) > 1_000_000
print("ok", pattern.shape)
"""
    # PYTHONPATH puts the installed copy ahead of this environment's editable install; cwd: no source tree
    done = subprocess.run([sys.executable, "-c", f"TARGET = {str(target)!r}\n{script}"], cwd=tmp_path,
                          env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("ok")
