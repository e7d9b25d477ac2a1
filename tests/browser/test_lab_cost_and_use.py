"""Lab II panels on /lab in a real browser: each renders a chart in both languages, no console error, no
unfilled placeholder; switching the flash tile step moves the highlighted tile (URL state)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.test_lab import idle, lab_texts, open_lab

LAB2 = ["complexity", "flash", "kvcache", "generate", "norms", "lens", "ablation"]
SMALL = {"cxn": "512", "nl": "4", "ns": "3", "gn": "4"}  # keeps the first (uncached) load short


def test_lab2_panels_have_a_title_and_lead_in_both_languages() -> None:
    en, zh = lab_texts("en"), lab_texts("zh")
    for panel in LAB2:
        for part in ("title", "lead"):
            assert en[f"{panel}_{part}"] and zh[f"{panel}_{part}"] and en[f"{panel}_{part}"] != zh[f"{panel}_{part}"]


@pytest.mark.browser
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_lab2_panel_renders(watched: Any, server: Any, lang: str) -> None:
    page = watched.page
    page.set_default_timeout(90000)
    open_lab(page, server.url, model="gpt", text="我爱北京天安门", lang=lang, **SMALL)
    for panel in LAB2:
        section = page.locator(f"#panel-{panel}")
        assert section.get_attribute("data-rendered"), panel
        assert section.locator(".plot .main-svg").count() >= 1, f"{panel}: no chart"
        assert section.locator(".lab-error").count() == 0, section.locator(".lab-error").all_inner_texts()
        shown = section.inner_text()
        assert not re.search(r"⟦|undefined|NaN|\{\w+\}", shown), (panel, shown[:400])
    if lang == "zh":
        assert "注意力权重不等于重要性" in page.inner_text("#panel-ablation")
    assert watched.errors == []


@pytest.mark.browser
def test_the_flash_tile_step_is_url_state(watched: Any, server: Any) -> None:
    page = watched.page
    page.set_default_timeout(90000)
    open_lab(page, server.url, model="gpt", text="the cat sat", lang="en", ft="2", **SMALL)
    title = page.locator("#panel-flash h3").first.inner_text()
    assert title.startswith("Step 3 of"), title
    page.fill("#controls-flash input[data-field='flTile']", "0")
    page.dispatch_event("#controls-flash input[data-field='flTile']", "change")
    idle(page)
    assert page.locator("#panel-flash h3").first.inner_text().startswith("Step 1 of")
    assert "ft=" not in page.url  # back at its default
    assert watched.errors == []
