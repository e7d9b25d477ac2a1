"""The page reads stage names, never writes or parses them: static/js builds its stepper from the server's
description of each stage (app/stage_descriptions.py, GET /api/models/{name} `stages`), finds a stage by what it is
(static/js/shared/stage_names.js) and keeps every described stage in its plan (static/js/stages.js)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from app.stage_descriptions import describe
from checkpoints import load_checkpoint
from model.config import TransformerConfig
from model.transformer import Transformer

ROOT = Path(__file__).resolve().parents[2]
JS = ROOT / "static" / "js"
NAMES = JS / "shared" / "stage_names.js"


def page_scripts() -> list[Path]:
    return sorted(p for p in JS.rglob("*.js") if "vendor" not in p.parts)


def test_the_page_spells_no_stage_name() -> None:
    spelled = [f"{p.relative_to(ROOT)}:{i}" for p in page_scripts()
               for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if "hook_" in line]
    assert len(spelled) <= 10 and all(s.startswith("static/js/shared/stage_names.js") for s in spelled), spelled
    # no regular expression reads a stage name's parts (a block, a site, a hook)
    parsing = re.compile(r"/[^/\n]*(blocks\\\.|hook_|attn\\\.|\(encoder\|decoder\))[^/\n]*/")
    parsed = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in page_scripts()
              for m in parsing.finditer(p.read_text(encoding="utf-8"))]
    assert not parsed, parsed


def models() -> dict[str, Transformer]:
    weights = ROOT / "model" / "weights"
    return {
        "tiny-gpt": load_checkpoint(weights / "tiny-gpt").model,
        "tiny-translator": load_checkpoint(weights / "tiny-translator").model,  # two stacks, cross-attention
        "post-ln-rope-qk-norm": Transformer(TransformerConfig(  # Post-LN (resid_mid's two stages), a pos stop
            architecture="encoder-decoder", vocab_size=50, d_model=16, n_layers=2, n_decoder_layers=1, n_heads=2,
            pos_encoding="rope", norm_placement="post", qk_norm=True, activation="swiglu")),
    }


def node(script: str) -> Any:
    done = subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60,
                          check=True)
    return json.loads(done.stdout)


needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run the page's modules")


@needs_node
@pytest.mark.parametrize("name", ["tiny-gpt", "tiny-translator", "post-ln-rope-qk-norm"])
def test_the_page_finds_each_stage_by_what_it_is(name: str) -> None:
    info = {"stages": describe(models()[name])}
    found = node(f"const m = await import({json.dumps(NAMES.as_uri())});\n"
                 f"const info = {json.dumps(info)};\n"
                 "console.log(JSON.stringify(info.stages.map((r) => [m.findStage(info, r), m.maskOf(info, r.name)])));")
    for row, (name_found, mask) in zip(info["stages"], found, strict=True):
        assert name_found == row["name"]
        if row["hook"] == "pattern":  # the masked scores of the same attention and layer
            assert mask is not None and next(r for r in info["stages"] if r["name"] == mask)["hook"] == "attn_scores"
            assert mask.rpartition(".")[0] == row["name"].rpartition(".")[0]
        else:
            assert mask is None


@needs_node
@pytest.mark.parametrize("name", ["tiny-gpt", "tiny-translator", "post-ln-rope-qk-norm"])
def test_the_plan_keeps_every_described_stage(name: str) -> None:
    model = models()[name]
    info = {"stages": describe(model)}
    plan = node(f"const {{ buildPlan }} = await import({json.dumps((JS / 'stages.js').as_uri())});\n"
                f"const plan = buildPlan({json.dumps(info)});\n"
                "const held = (at) => Object.fromEntries(Object.entries(at).map(([k, v]) => [k, { main: v.main, "
                "extras: v.extras }]));\n"
                "const steps = [...plan.steps.values()].map((s) => ({ id: s.id, key: s.key, panel: s.panel, "
                "at: held(s.at) }));\n"
                "console.log(JSON.stringify({ steps, order: plan.order, layers: plan.layers }));")
    held: list[str] = []
    for step in plan["steps"]:
        assert (ROOT / "static" / "js" / "panels" / f"{step['panel']}.js").is_file(), step
        for at in step["at"].values():
            held += [at["main"], *at["extras"]]
    stepped = [row for row in info["stages"] if row["step"]]
    assert sorted(held) == sorted(row["name"] for row in stepped)  # each described stage once, none dropped
    for row in stepped:
        step = next(s for s in plan["steps"] if s["key"] == row["step"] and s["id"].startswith(row["stack"] or ""))
        at = step["at"]["top" if row["layer"] is None else str(row["layer"])]
        assert (at["main"] == row["name"]) == row["main"]
    # a positional stop for every stack, even where positions enter at q and k (RoPE) and no stage is its own
    stacks = {row["stack"] or "" for row in info["stages"] if row["hook"] == "embed"}
    assert {s["id"] for s in plan["steps"] if s["key"] == "pos"} == {f"{s}.pos" if s else "pos" for s in stacks}
    n_layers = {stack: len(layers) for stack, layers in plan["layers"].items()}
    assert len(plan["order"]) == len({(o["id"], o["layer"]) for o in plan["order"]})
    assert max(n_layers.values()) == max(model.cfg.n_layers, model.cfg.decoder_layers)
