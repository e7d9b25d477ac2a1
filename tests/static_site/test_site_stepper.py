"""A recorded site's stepper, example sentences and model menu (static_site/record.py, static/js/recorded.js).

The site is recorded from one chapter on the tests' two-layer GPT with steppers and every model's example
sentences, as a larger model's stepper is recorded (its view's layer only: FULL_STEPPER_BYTES 0). From file://,
→ walks that layer and passes over the other, the layer menu greys it, and each example chip and model the site
holds opens.
"""

from __future__ import annotations

from typing import Any

import pytest

from static_site.export import SiteSummary, export_site

pytestmark = pytest.mark.browser


@pytest.fixture(scope="session")
def stepped(server: Any, browser: Any, tmp_path_factory: pytest.TempPathFactory) -> SiteSummary:
    """A site with steppers and the models' example sentences, recorded as a larger model's would be: each view's
    own layer only (FULL_STEPPER_BYTES 0), from one chapter on the tests' two-layer GPT."""
    from unittest import mock

    from app.factory import create_app
    from static_site import record

    app = create_app(server.settings, server.registry)
    views_only = record.Recorder.examples
    # the examples' own steppers are the chapter's walk again (tested here on the chapter): their views only, for time
    with mock.patch.object(record, "FULL_STEPPER_BYTES", 0), \
            mock.patch.object(record.Recorder, "examples", lambda self, stepper=True: views_only(self, False)):
        return export_site(tmp_path_factory.mktemp("stepped") / "site", app, log=lambda line: None,
                           chapters=["qkv"], browser=browser)


def opened(page: Any, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("body[data-ready='1']")
    drawn(page)


def drawn(page: Any) -> None:
    page.wait_for_function("() => !document.body.classList.contains('busy')")
    page.wait_for_timeout(150)  # the greying of what the site lacks runs after the view is drawn
    page.wait_for_function("() => !document.body.classList.contains('busy')")


def test_the_stepper_walks_the_recorded_layer_and_passes_over_the_others(stepped: SiteSummary, browser: Any) -> None:
    """→ from the start to the end visits every stage of the recorded layer and no other layer, with no message;
    the layer menu greys the layer the site lacks."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    context.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file://") else r.abort())
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    try:
        opened(page, f"{stepped.folder.as_uri()}/index.html?chapter=qkv&lang=en")
        layer = page.get_attribute("#stage", "data-layer")
        assert page.locator("#layer option").count() == 2 and layer == "0"
        assert page.is_enabled("#layer option[value='0']") and page.is_disabled("#layer option[value='1']")
        stages = page.locator("#stage-list button[data-stage]").count()
        page.click("#stage-list button[data-stage] >> nth=0")
        drawn(page)
        seen = []
        while True:
            seen.append((page.get_attribute("#stage", "data-stage"), page.get_attribute("#stage", "data-layer")))
            assert page.is_hidden("#message"), (seen[-1], page.inner_text("#message"))
            assert page.locator("#panel .js-plotly-plot, #panel table").count() > 0, seen[-1]
            url = page.url
            page.keyboard.press("ArrowRight")
            drawn(page)
            if page.url == url:
                break
        assert len(seen) == stages and {layer for _, layer in seen} <= {"", "0"}, seen
        page.keyboard.press("ArrowLeft")  # and back: the layer before the last stage is still the recorded one
        drawn(page)
        assert page.get_attribute("#stage", "data-layer") in ("", "0") and page.is_hidden("#message")
        assert not errors, errors
    finally:
        context.close()


def test_the_models_example_sentences_open_from_file(stepped: SiteSummary, browser: Any) -> None:
    """Each example chip the site holds is enabled and opens its sentence; the model menu offers the models whose
    view of the sentence it holds, and switching opens one."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    context.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file://") else r.abort())
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    try:
        opened(page, f"{stepped.folder.as_uri()}/index.html?model=gpt&lang=zh")  # free exploring: the chips show
        assert page.is_hidden("#message"), page.inner_text("#message")
        chips = page.locator(".examples .example:visible")
        assert chips.count() >= 2
        for i in range(chips.count()):
            chip = chips.nth(i)
            assert chip.is_enabled(), chip.get_attribute("data-text")
            text = chip.get_attribute("data-text")
            chip.click()
            drawn(page)
            assert page.is_hidden("#message"), (text, page.inner_text("#message"))
            assert page.input_value("#text") == text and page.locator("#panel .js-plotly-plot").count() > 0
        assert page.is_enabled("#model")
        others = page.eval_on_selector_all("#model option:not([disabled])", "(os) => os.map((o) => o.value)")
        current = page.input_value("#model")
        assert len(others) >= 2 and current in others, others
        page.select_option("#model", next(m for m in others if m != current))
        drawn(page)
        assert page.is_hidden("#message"), page.inner_text("#message")
        assert page.locator("#panel .js-plotly-plot").count() > 0
        assert not errors, errors
    finally:
        context.close()
