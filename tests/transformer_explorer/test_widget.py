"""show(): the widget's HTML in Chromium with every request but the page's own aborted draws Plotly charts with the
page's panels, steps through a trace's stages with ←/→, and asks for nothing (no CDN, no server)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from transformer_explorer.explorer import Explorer
from transformer_explorer.results import Result
from transformer_explorer.widget import show, widget_html

pytestmark = pytest.mark.browser
PAGE = "http://notebook.test/"  # the one address answered: the notebook's output, nothing else


@pytest.fixture(scope="module")
def tiny() -> Iterator[Explorer]:
    explorer = Explorer("tiny-gpt")
    yield explorer
    explorer.close()


def open_offline(browser: Any, document: str) -> tuple[Any, list[str], list[str]]:
    """The page holding `document`, every other request aborted and recorded; and the page's errors."""
    page = browser.new_page(viewport={"width": 1100, "height": 800})
    asked: list[str] = []
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)

    def answer(route: Any) -> None:
        if route.request.url == PAGE:
            route.fulfill(body=document, content_type="text/html; charset=utf-8")
        else:
            asked.append(route.request.url)
            route.abort()

    page.route("**/*", answer)
    page.goto(PAGE)
    return page, asked, errors


def drawn(page: Any) -> None:
    page.wait_for_selector("#widget[data-ready=true]", timeout=20_000)


def test_a_trace_steps_through_its_stages_offline(browser: Any, tiny: Explorer) -> None:
    stages = ["blocks.0.attn.hook_pattern", "blocks.0.hook_resid_post", "blocks.1.hook_resid_post"]
    trace = tiny.trace("The cat sat on the mat.", stages)
    page, asked, errors = open_offline(browser, widget_html(trace))
    drawn(page)
    assert page.locator(".js-plotly-plot .main-svg").count() > 0  # the chart, drawn by Plotly
    where = page.locator(".widget-where")
    assert where.inner_text().startswith("1 / 3") and "blocks.0.attn.hook_pattern" in where.inner_text()
    page.locator("#widget").click()
    page.keyboard.press("ArrowRight")
    page.wait_for_function("document.querySelector('#widget').dataset.view === '1'")
    assert "blocks.0.hook_resid_post" in where.inner_text()
    # the heatmap holds the result's numbers: the stage's [pos, d_model] values (float32, as decoded in Python)
    z = page.evaluate("document.querySelector('.chart-card[data-key=stage] .js-plotly-plot').data[0].z")
    values = trace["blocks.0.hook_resid_post"].values
    np.testing.assert_allclose(np.array(z, dtype=np.float64), values, rtol=1e-6, atol=1e-6)
    page.keyboard.press("ArrowRight")
    page.wait_for_function("document.querySelector('#widget').dataset.view === '2'")
    page.keyboard.press("ArrowRight")  # past the last stage: it stays there
    page.keyboard.press("ArrowLeft")
    page.wait_for_function("document.querySelector('#widget').dataset.view === '1'")
    assert asked == [] and errors == []
    page.close()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_heads_next_tokens_and_the_why_experiments_draw_offline(browser: Any, tiny: Explorer, lang: str) -> None:
    results: list[Result] = [
        tiny.attention("The cat sat", layer=1),
        tiny.predict("The cat sat on the"),
        tiny.logit_attribution("The capital of France is"),
        tiny.activation_patching("Mary gave a book to John. John gave it to",
                                 "John gave a book to Mary. Mary gave it to", grid="heads", knockout=False),
        tiny.steering("I went to the", ["Je suis"], ["I am"], layer=1, alpha=4.0, max_new_tokens=3),
        tiny.lab("logit_lens", text="The cat sat"),
    ]
    page, asked, errors = open_offline(browser, widget_html(*results, lang=lang))
    drawn(page)
    for index, result in enumerate(results):
        if index:
            page.keyboard.press("ArrowRight")
            page.wait_for_function(f"document.querySelector('#widget').dataset.view === '{index}'")
        assert page.locator(".js-plotly-plot .main-svg").count() > 0, result.kind
        assert page.locator(".widget-error").count() == 0, page.locator(".widget-error").all_inner_texts()
        text = page.locator("#widget").inner_text()
        assert "⟦" not in text  # no text key left unfilled
    if lang == "zh":
        assert page.evaluate("document.documentElement.lang") == "zh"
    assert asked == [] and errors == []
    page.close()


def test_the_notebook_output_is_an_iframe_that_draws(browser: Any, tiny: Explorer) -> None:
    widget = show(tiny.predict("The cat sat on the"))
    output = f"<!doctype html><html><body>{widget._repr_html_()}</body></html>"  # as a notebook puts it in a cell
    page, asked, errors = open_offline(browser, output)
    frame = page.frame_locator("iframe")
    frame.locator("#widget[data-ready=true]").wait_for(timeout=20_000)
    assert frame.locator(".js-plotly-plot .main-svg").count() > 0
    assert asked == [] and errors == []
    page.close()


def test_show_refuses_what_it_cannot_draw(tiny: Explorer) -> None:
    with pytest.raises(ValueError, match="en, zh"):
        show(tiny.tokenize("abc"), lang="fr")
    with pytest.raises(ValueError, match="needs a result"):
        show()
