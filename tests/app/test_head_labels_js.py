"""The head label the page prints (static/js/probes.js) agrees with what a chapter shows: SmolLM2's layer 23 head 4,
the head chapter 15 shows carrying "France", is labelled by its measured pattern with its score, never "attention
sink", and the note says a probe's label is a habit that the same head can add to (teaching review 4, finding 16)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def page_texts(lang: str) -> dict[str, str]:
    texts: dict[str, str] = json.loads((ROOT / "static" / "text" / f"{lang}.json").read_text(encoding="utf-8"))["ui"]
    return texts


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run the page's modules")
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_paris_head_is_labelled_by_its_measured_pattern_and_score(lang: str) -> None:
    meta = json.loads((ROOT / "checkpoints" / "meta" / "smollm2_heads.json").read_text(encoding="utf-8"))
    texts = page_texts(lang)
    script = (f"const m = await import({json.dumps((ROOT / 'static/js/probes.js').as_uri())});\n"
              f"const strings = {json.dumps(texts)};\n"
              "const t = (k, v = {}) => strings[k].replace(/\\{(\\w+)\\}/g, (_, n) => String(v[n]));\n"
              f"const known = m.headLabel({{ meta: {json.dumps(meta)} }}, 'en', {{ layer: 23, head: 4 }});\n"
              "console.log(JSON.stringify({ known, note: m.labelNote({ t, separator: ' ' }, known) }));")
    done = subprocess.run(["node", "--input-type=module"], input=script, capture_output=True, text=True, timeout=60,
                          check=True)
    found = json.loads(done.stdout)
    entry = next(e for e in meta["natural_head_scores"]["en"] if (e["layer"], e["head"]) == (23, 4))
    assert found["known"]["label"] == entry["label"] and found["known"]["score"] == pytest.approx(
        entry["scores"][entry["label"]])
    assert f"{entry['scores'][entry['label']]:.2f}" in found["note"]
    assert "sink" not in texts[f"pat_{entry['label']}"] and "汇聚" not in texts[f"pat_{entry['label']}"]
    assert texts["head_label_also"] in found["note"]
