"""model/ is the model only: no module under it trains, builds an optimizer, or imports the training package."""

from __future__ import annotations

import ast
from pathlib import Path

MODEL_DIR = Path(__file__).resolve().parents[2] / "model"
OPTIMIZER_NAMES = {"Adam", "AdamW", "SGD", "RMSprop", "Adagrad", "Optimizer", "lr_scheduler"}


def imported_names(tree: ast.AST) -> list[str]:
    """Every module (and `module.name`) a file imports, at any depth."""
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
            names.extend(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_model_never_imports_optimizers_or_training() -> None:
    offenders: list[str] = []
    for path in sorted(MODEL_DIR.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for name in imported_names(tree):
            parts = name.split(".")
            if parts[0] == "training" or name.startswith("torch.optim") or parts[-1] in OPTIMIZER_NAMES:
                offenders.append(f"{path.name}: {name}")
        for node in ast.walk(tree):  # torch.optim.AdamW(...) written out without an import of its own
            if isinstance(node, ast.Attribute) and node.attr == "optim":
                offenders.append(f"{path.name}: line {node.lineno} uses .optim")
    assert not offenders, offenders
