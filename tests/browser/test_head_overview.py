"""The all-layers × heads overview (static/js/head_overview.js): every head's map on one canvas, labelled heads
tagged, a click opens that head; the chat toggle only for models with a chat template."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.helpers import open_page, wait_idle

pytestmark = pytest.mark.browser


def overview(watched: Any, server: Any) -> Any:
    page = watched.page
    open_page(page, server.url, model="gpt", text="the cat sat. the cat sat.", stage="softmax", layer=0, lang="en")
    before = page.get_attribute("#stage", "data-rendered")
    page.click('#views button[data-view="layers"]')
    page.wait_for_function("(b) => document.querySelector('#stage').dataset.rendered !== b", arg=before)
    wait_idle(page)
    return page


def test_every_head_on_one_canvas_with_its_label(watched: Any, server: Any) -> None:
    page = overview(watched, server)
    box = page.eval_on_selector("#panel canvas.head-overview", "c => ({w: c.clientWidth, h: c.clientHeight})")
    assert box["w"] > 200 and box["h"] > 60
    # 2 layers x 4 heads: the maps are not blank (a softmax row sums to 1, so some pixel is dark)
    dark = page.eval_on_selector("#panel canvas.head-overview", """c => {
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0; for (let i = 0; i < d.length; i += 4) if (d[i] < 120 && d[i + 2] > 100) n += 1; return n; }""")
    assert dark > 20
    legend = page.inner_text("#panel .overview-legend")
    assert "previous-token" in legend  # the gpt test model's meta labels layer 1 head 2
    assert "coreference" in legend  # and its coreference probe layer 0 head 1 (probes.js reads that list first)
    assert not watched.errors


def test_a_coreference_head_is_named_in_the_head_menu(watched: Any, server: Any) -> None:
    page = watched.page
    open_page(page, server.url, model="gpt", text="the cat sat. the cat sat.", stage="softmax", layer=0, lang="zh")
    assert page.inner_text('#head option[value="1"]').startswith("1 · 指代 · 代词句子")
    assert not watched.errors


def test_a_click_opens_that_layer_and_head(watched: Any, server: Any) -> None:
    page = overview(watched, server)
    # the second column (layer 1), the third row (head 2): LEFT 34, TOP 18 px, then data-cell px per map
    canvas = page.locator("#panel canvas.head-overview")
    step = float(canvas.get_attribute("data-cell") or 0)
    before = page.get_attribute("#stage", "data-rendered")
    canvas.click(position={"x": 34 + step * 1.5, "y": 18 + step * 2.5})
    page.wait_for_function("(b) => document.querySelector('#stage').dataset.rendered !== b", arg=before)
    wait_idle(page)
    assert page.get_attribute("#stage", "data-view") == "head"
    assert page.get_attribute("#stage", "data-layer") == "1"
    assert page.input_value("#head") == "2"
    assert not watched.errors


def test_no_chat_toggle_without_a_chat_template(watched: Any, server: Any) -> None:
    page = watched.page
    open_page(page, server.url, model="gpt", text="the cat", chat="1", lang="en")
    assert page.is_hidden("#chat-row")
    assert "chat=1" not in page.url  # a model without a template reads the text as it is
    assert not watched.errors
