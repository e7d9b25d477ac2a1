"""The lab on a projector (issue 41, item 2; review 4 finding 15: "the lab has no presentation mode, P does nothing,
and its sidebar takes about 290 px"): P toggles the explorer's presentation mode, the panel list folds away, the
text grows, the charts' tick labels and cell text are 12 px or more at 1280×720, and Escape or the button leaves it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.lab_page import idle, lab_texts, open_lab

pytestmark = pytest.mark.browser

SIZES = r"""() => { const out = {tick: [], cell: []};
  for (const e of document.querySelectorAll('.lab-panel:not([hidden]) .js-plotly-plot svg text')) {
    if (!e.textContent.trim() || e.getBoundingClientRect().width === 0) continue;
    const cls = e.parentElement.getAttribute('class') || '';
    const kind = /^[xy]\d*tick$/.test(cls) ? 'tick' : cls === 'heatmap-label' ? 'cell' : null;
    if (kind) out[kind].push(parseFloat(getComputedStyle(e).fontSize));
  }
  return out; }"""


def redrawn(page: Any, key: str, panel: str) -> None:
    before = page.get_attribute(f"#panel-{panel}", "data-rendered")
    page.keyboard.press(key)
    page.wait_for_function("([n, b]) => document.getElementById(`panel-${n}`).dataset.rendered !== b",
                           arg=[panel, before])
    idle(page)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_p_puts_the_lab_on_a_projector(server: Any, watched: Any, lang: str) -> None:
    page = watched.page
    page.set_viewport_size({"width": 1280, "height": 720})
    panel = "logit_lens"
    # 12 positions: the top tokens fit their cells at 12 px
    open_lab(page, server.url, panel=panel, model="gpt", lang=lang, text="the cat sat")
    page.wait_for_selector(f"#panel-{panel}[data-rendered]")
    assert page.is_visible("#toc")
    width = page.eval_on_selector(f"#panel-{panel}", "e => e.getBoundingClientRect().width")
    lead = page.eval_on_selector(f"#panel-{panel} .lab-lead", "e => parseFloat(getComputedStyle(e).fontSize)")
    assert page.inner_text("#present") == lab_texts(lang)["present"]
    redrawn(page, "p", panel)
    assert page.evaluate("() => document.body.classList.contains('present')")
    assert "present=1" in page.url
    assert page.is_hidden("#toc")  # the panel list folded away: the panel takes the width
    assert page.eval_on_selector(f"#panel-{panel}", "e => e.getBoundingClientRect().width") > width + 200
    assert page.eval_on_selector(f"#panel-{panel} .lab-lead", "e => parseFloat(getComputedStyle(e).fontSize)") > lead
    assert page.inner_text("#present") == lab_texts(lang)["exit_present"]
    sizes = page.evaluate(SIZES)
    assert sizes["tick"] and sizes["cell"], sizes
    assert min(sizes["tick"] + sizes["cell"]) >= 12, sizes
    redrawn(page, "Escape", panel)
    assert page.is_visible("#toc") and "present=1" not in page.url
    # the button does the same, and typing a P in the sentence does not
    page.click("#present")
    page.wait_for_function("() => document.body.classList.contains('present')")
    page.click("#present")
    page.wait_for_function("() => !document.body.classList.contains('present')")
    assert not watched.errors, watched.errors


def test_a_p_typed_in_a_field_is_a_letter(server: Any, watched: Any) -> None:
    page = watched.page
    open_lab(page, server.url, panel="logit_lens", model="gpt")
    page.fill("#text", "")
    page.type("#text", "pp")
    assert page.input_value("#text") == "pp"
    assert not page.evaluate("() => document.body.classList.contains('present')")
    assert not watched.errors, watched.errors
