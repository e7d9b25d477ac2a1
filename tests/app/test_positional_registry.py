"""One registry of positional-encoding kinds (model/positional.py KINDS): the config, the API and the layers read it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from fastapi.testclient import TestClient

from app.schemas import InlineConfig, PositionalQuery
from model.config import TransformerConfig
from model.positional import KINDS
from model.transformer import Transformer


def test_config_and_schemas_list_exactly_the_registry() -> None:
    assert InlineConfig.model_json_schema()["properties"]["pos_encoding"]["enum"] == list(KINDS)
    shown = PositionalQuery.model_json_schema()["properties"]["kind"]["anyOf"][0]["enum"]
    assert shown == [name for name, kind in KINDS.items() if kind.where != "nowhere"]


@pytest.mark.parametrize("name", list(KINDS))
def test_each_kind_changes_what_the_registry_says(name: str) -> None:
    """A kind that adds to the embedding records hook_pos_embed; RoPE rotates q, k; ALiBi changes the scores."""
    cfg = TransformerConfig(d_model=16, n_layers=1, n_heads=2, n_ctx=8, pos_encoding=name, vocab_size=11)
    model = Transformer(cfg).eval()
    _, trace = model.run_with_trace(torch.tensor([[1, 2, 3, 4]]))
    kind = KINDS[name]
    assert ("hook_pos_embed" in trace) == (kind.where == "embedding")
    assert ("blocks.0.attn.hook_rot_q" in trace) == (kind.where == "q_k")
    learned = any(n.endswith("W_pos.weight") for n, _ in model.named_parameters())
    assert learned == kind.learned


def test_the_api_serves_the_registry(client: TestClient) -> None:
    answer = client.get("/api/positional-encoding/kinds")
    assert answer.status_code == 200
    assert [k["name"] for k in answer.json()] == list(KINDS)
    assert answer.json()[2] == KINDS["rope"].to_dict()


ROOT = Path(__file__).resolve().parents[2]
TEXTS = {lang: json.loads((ROOT / "static" / "text" / f"{lang}.json").read_text(encoding="utf-8"))
         for lang in ("en", "zh")}


@pytest.mark.parametrize("lang", list(TEXTS))
@pytest.mark.parametrize("name", list(KINDS))
def test_every_kind_has_its_texts(name: str, lang: str) -> None:
    """The page picks a kind's texts by its name: adding a kind to the registry means writing these."""
    stages, ui = TEXTS[lang]["stages"], TEXTS[lang]["ui"]
    assert f"pos.formula.{name}" in stages and f"pos.explain.{name}" in stages
    assert f"iv_pos_{name}" in ui
    if KINDS[name].where == "scores":  # a bias kind shows in the scale stage too (static/js/stage_text.js)
        assert {f"pos.formula.{name}.causal", f"scale.formula.{name}", f"scale.explain.{name}"} <= set(stages)
        assert {f"hover_scaled_{name}", f"worked_scaled_{name}"} <= set(ui)


def test_no_other_list_of_kinds() -> None:
    """No Python or JS file but the registry spells out three or more kinds' names in one list."""
    quoted = "|".join(f"[\"']{name}[\"']" for name in KINDS)
    listing = re.compile(rf"[\[(]\s*(?:(?:{quoted})\s*,\s*){{2,}}")
    packages = ("model", "app", "analysis", "checkpoints", "lab", "training")
    files = [p for pkg in packages for p in (ROOT / pkg).rglob("*.py")]
    files += list((ROOT / "static" / "js").rglob("*.js"))
    copies = [p.relative_to(ROOT).as_posix() for p in files
              if p != ROOT / "model" / "positional.py" and listing.search(p.read_text(encoding="utf-8"))]
    assert not copies, copies


# a comparison with a kind's name: `cfg.pos_encoding == ...`, `m.pos === ...`, or `== "rope"` and the like
# ("none" is too common a word to look for on its own; with pos_encoding it is found)
SHIPPED = "|".join(name for name in KINDS if name != "none")
COMPARED = re.compile(rf"""pos_encoding\s*[!=]==?|\.pos\s*[!=]==?"""
                      rf"""|[!=]==?\s*["'](?:{SHIPPED})["']|["'](?:{SHIPPED})["']\s*[!=]==?""")
# comparisons that are about something else, (file, snippet); none today: the rotation's step is named "rope"
# (app/stage_descriptions.py), and its panel tells it by its hook (static/js/panels/qkv.js: `hook === "rot_q"`)
NOT_A_KIND: set[tuple[str, str]] = set()


def test_no_file_branches_on_kind_names() -> None:
    """Code asks the kind (model/positional.py: its family, `learned`, `check`, `show`), never compares its name:
    a kind added to the registry then needs no edit elsewhere. Setting a name (`pos_encoding="rope"`) is fine."""
    packages = ("model", "app", "analysis", "checkpoints", "lab", "training")
    files = [p for pkg in packages for p in (ROOT / pkg).rglob("*.py")]
    files += [p for p in (ROOT / "static" / "js").rglob("*.js") if "vendor" not in p.parts]
    found = []
    for path in files:
        if path == ROOT / "model" / "positional.py":
            continue
        name = path.relative_to(ROOT).as_posix()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = COMPARED.search(line)
            if match and not any(name == f and snippet in line for f, snippet in NOT_A_KIND):
                found.append(f"{name}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


def test_the_branch_finder_finds_branches() -> None:
    for line in ('if cfg.pos_encoding == "rope":', 'kind === "alibi" ? a : b', 'x = "learned" != kind',
                 'm.pos === "sinusoidal"', "r.pos_encoding === 'none'"):
        assert COMPARED.search(line), line
    for line in ('pos_encoding="rope"', 'value === "none"', 'KINDS["rope"]', 'kind.where == "q_k"'):
        assert not COMPARED.search(line), line
