"""The page's stage names (static/js/shared/stage_names.js) are model/hooks.py's, name for name."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from model.hooks import ATTENTION_STAGES, BLOCK_STAGES, EMBED_STAGES, MLP_STAGES, stage_name

JS = Path(__file__).resolve().parents[2] / "static" / "js" / "shared" / "stage_names.js"


def js_list(name: str) -> list[str]:
    found = re.search(rf"export const {name} = \[(.*?)\];", JS.read_text(encoding="utf-8"))
    assert found, f"{JS.name} has no {name}"
    return re.findall(r'"(\w+)"', found.group(1))


def test_the_page_knows_the_same_stages_inside_a_layer() -> None:
    assert js_list("ATTENTION_STAGES") == list(ATTENTION_STAGES)
    assert js_list("MLP_STAGES") == list(MLP_STAGES)


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run the page's module")
def test_the_page_writes_every_name_as_the_model_does() -> None:
    asked = [(s, None, stack, False) for s in (*EMBED_STAGES, "logits") for stack in (None, "encoder")]
    for stack in (None, "encoder", "decoder"):
        for layer in (0, 3):
            asked += [(s, layer, stack, False) for s in (*BLOCK_STAGES, *MLP_STAGES, *ATTENTION_STAGES)]
            asked += [(s, layer, stack, True) for s in ATTENTION_STAGES]
    asked = [a for a in asked if not (a[0] == "logits" and a[2] is not None)]  # the logits have no stack
    script = (f"const m = await import({json.dumps(JS.as_uri())});\n"
              f"const asked = {json.dumps(asked)};\n"
              "console.log(JSON.stringify(asked.map(([s, l, stack, cross]) => m.stageName(s, l, { stack, cross }))));")
    done = subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60,
                          check=True)
    written = json.loads(done.stdout)
    expected = [stage_name(s, layer, stack=stack, cross=cross) for s, layer, stack, cross in asked]
    assert written == expected
