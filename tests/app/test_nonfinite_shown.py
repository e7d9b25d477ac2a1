"""An overflow in a stage is shown on the page, never hidden (issue 40): the server counts the NaN/Inf cells no mask
put there (`nonfinite`, app/tensors.py), the page's decoded tensor keeps that count, and the stage's shape badge
says it in the page's language (static/js/panels/common.js, ui.nonfinite_cells)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
API = ROOT / "static" / "js" / "shared" / "api.js"


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run the page's modules")
@pytest.mark.parametrize(("payload", "count"), [({"nonfinite": 3}, 3), ({}, 0)])
def test_the_pages_tensor_keeps_the_servers_count(payload: dict[str, int], count: int) -> None:
    tensor = {"name": "x", "dims": ["pos"], "shape": [2], "data": [1, None], **payload}
    script = (f"const m = await import({json.dumps(API.as_uri())});\n"
              f"const t = new m.Tensor({json.dumps(tensor)});\n"
              "console.log(JSON.stringify(t.nonfinite));")
    done = subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60,
                          check=True)
    assert json.loads(done.stdout) == count


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_badge_words_it_with_the_count(lang: str) -> None:
    words = json.loads((ROOT / "static" / "text" / f"{lang}.json").read_text(encoding="utf-8"))["ui"]
    assert "{n}" in words["nonfinite_cells"]
    common = (ROOT / "static" / "js" / "panels" / "common.js").read_text(encoding="utf-8")
    assert 'ctx.t("nonfinite_cells", { n: tensor.nonfinite })' in common
