"""Lab II panels on /lab: each has a title and a lead in both languages (test_lab.py renders every
panel); switching the flash tile step moves the highlighted tile (URL state)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.test_lab import SMALL, idle, lab_texts, open_lab

LAB2 = ["complexity", "flash", "kvcache", "generate", "norms", "lens", "ablation"]


def test_lab2_panels_have_a_title_and_lead_in_both_languages() -> None:
    en, zh = lab_texts("en"), lab_texts("zh")
    for panel in LAB2:
        for part in ("title", "lead"):
            assert en[f"{panel}_{part}"] and zh[f"{panel}_{part}"] and en[f"{panel}_{part}"] != zh[f"{panel}_{part}"]


@pytest.mark.browser
def test_the_flash_tile_step_is_url_state(watched: Any, server: Any) -> None:
    page = watched.page
    page.set_default_timeout(90000)
    open_lab(page, server.url, model="gpt", text="the cat sat", lang="en", ft="2", panel="flash", **SMALL)
    title = page.locator("#panel-flash h3").first.inner_text()
    assert title.startswith("Step 3 of"), title
    page.fill("#controls-flash input[data-field='flTile']", "0")
    page.dispatch_event("#controls-flash input[data-field='flTile']", "change")
    idle(page)
    assert page.locator("#panel-flash h3").first.inner_text().startswith("Step 1 of")
    assert "ft=" not in page.url  # back at its default
    assert watched.errors == []
