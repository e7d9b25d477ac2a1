"""What the lab page's browser tests share: opening the page and a panel, switching the model, reading texts,
and the checks every panel must pass (tests/browser/test_lab.py, test_lab_side_by_side.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from app.lab_panels import lab_panel_names

ROOT = Path(__file__).resolve().parents[2]
PANELS = lab_panel_names()
TOGGLES = ["no_scale", "no_mask", "window", "temperature", "ablate", "shuffle"]
# keeps the first (uncached) loads of the costly panels short
SMALL = {"complexity.longest": "512", "norm_placement.layers": "4", "norm_placement.steps": "3",
         "cached_decoding.steps": "4",
         # the test decoder reads characters: the panel's default pair (France/Italy, one token each for the real
         # models) is 6 and 5 of them, and patching needs prompts of as many tokens
         "activation_patching.corrupted": "The capital of Sweden is"}
VARIANT = {"compare.variant": "set", "compare.setting": "n_heads", "compare.value": "2"}
FAMILY_MODELS = {"decoder": "gpt", "encoder": "bert", "encoder-decoder": "translator"}  # tests/browser/models.py
# panels refused on every model of FAMILY_MODELS for a kind of layer none of them has (the panel says so without
# asking): nope_attention needs NoPE layers (tests/browser/test_gemma4_nope_views.py opens it on a SmolLM3-shaped model)
LACKING = {"nope_attention"}
PLACEHOLDER = re.compile(r"\{(\w+)\}")

def lab_texts(lang: str) -> dict[str, str]:
    return json.loads((ROOT / "static" / "text" / f"lab.{lang}.json").read_text(encoding="utf-8"))["ui"]


def shared_texts(lang: str) -> dict[str, str]:
    return json.loads((ROOT / "static" / "text" / f"shared.{lang}.json").read_text(encoding="utf-8"))["ui"]


def api_post(page: Any, path: str, body: dict[str, Any]) -> Any:
    return page.evaluate(
        """async ([path, body]) => (await fetch(path, {method: 'POST', headers: {'Content-Type': 'application/json'},
            body: JSON.stringify(body)})).json()""",
        [path, body],
    )

def open_lab(page: Any, base: str, **params: Any) -> None:
    page.goto(f"{base}/lab?{urlencode(params)}")
    page.wait_for_selector("body[data-ready='1']")
    idle(page)


def idle(page: Any) -> None:
    page.wait_for_function("() => !document.body.classList.contains('busy')")


def shown_panels(page: Any) -> list[str]:
    return page.eval_on_selector_all("#panels > section:not([hidden])", "els => els.map(e => e.dataset.panel)")


def open_panel(page: Any, name: str) -> None:
    """Click the panel's entry in the table of contents and wait until it is drawn."""
    page.click(f"#toc a[data-panel-link='{name}']")
    page.wait_for_function(
        "(n) => { const s = document.getElementById(`panel-${n}`); return !s.hidden && s.dataset.rendered; }", arg=name
    )
    idle(page)


RENDERED_AGAIN = "(b) => document.querySelector('#panel-interventions').dataset.rendered !== b"


def chart_state(page: Any) -> str:
    """The numbers the interventions panel draws: both heatmaps and the next-token bars."""
    return page.evaluate("""() => JSON.stringify([...document.querySelectorAll('#board-interventions .plot')]
        .map(el => (el.data || []).map(t => [t.z, t.y, t.x])))""")


def choose_model(page: Any, model: str) -> None:
    """Switch the model on the panel shown and wait until it is drawn again."""
    page.select_option("#model", model)
    page.wait_for_function("(m) => document.querySelector('#explorer-link').href.includes(`model=${m}`)", arg=model)
    idle(page)


def check_panel(page: Any, panel: str, refused: bool) -> None:
    """The panel is the one shown, titled, and draws a chart, or says why its experiment refuses this model."""
    assert shown_panels(page) == [panel]
    assert f"panel={panel}" in page.url
    section = page.locator(f"#panel-{panel}")
    title = section.locator("h2").inner_text()
    assert title and "⟦" not in title and title != panel, (panel, title)
    assert page.title().startswith(title)
    if refused:
        assert section.locator(".lab-refused").count() == 1, f"{panel}: no refusal"
        assert section.locator(".plot .main-svg").count() == 0, f"{panel}: a chart despite the refusal"
    else:
        assert section.locator(".plot .main-svg").count() >= 1, f"{panel}: no chart"
    assert section.locator(".lab-error").count() == 0, section.locator(".lab-error").all_inner_texts()
    shown = section.inner_text()
    assert not re.search(r"⟦|undefined|NaN|\{\w+\}", shown), (panel, shown[:400])
