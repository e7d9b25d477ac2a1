"""Predict, then reveal (issue 42), on the page of a student alone: a chapter's "Predict" button masks the chart
with the question and its answers; answering reveals the chart with the measured value, right or wrong, and the
one line on why, checked on the page with no server state. In EN and ZH, on the shipped tiny-gpt chapters."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from lessons.chapters import chapters
from tests.browser.helpers import open_page, wait_idle

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The test server with the shipped checkpoints (tiny-gpt: the chapters asked here)."""
    from tests.browser.models import ServerThread
    from tests.conftest import free_port

    srv = ServerThread(free_port(), tmp_path_factory.mktemp("questions"), extra_models=True)
    yield srv.start()
    srv.stop()


def asked(server: Any, chapter: str, lang: str) -> dict[str, Any]:
    """The chapter's question as the API asks it (its right answer and its measured line)."""
    with urllib.request.urlopen(f"{server.url}/api/lessons/{chapter}/questions?lang={lang}") as response:
        question: dict[str, Any] = json.load(response)["questions"][0]
    return question


def masked(page: Any) -> bool:
    """The mask is shown and covers the chart panel."""
    covered: bool = page.evaluate("""() => {
        const m = document.getElementById('question-mask'), p = document.getElementById('panel');
        if (!m) return false;
        const a = m.getBoundingClientRect(), b = p.getBoundingClientRect();
        return a.top <= b.top + 1 && a.left <= b.left + 1 && a.width >= b.width - 2
            && a.height >= Math.min(b.height, 160) - 2;
    }""")
    return covered


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_token_question_is_predicted_then_revealed(server: Any, watched: Any, lang: str) -> None:
    page = watched.page
    page.set_viewport_size({"width": 1280, "height": 720})
    open_page(page, server.url, chapter="scores", lang=lang)
    page.wait_for_selector("#lesson .predict")
    chart_top = page.evaluate("() => document.getElementById('panel').getBoundingClientRect().top")
    assert chart_top <= 720 - 200, chart_top  # the button does not push the chart off the first screen
    question = asked(server, "scores", lang)
    page.click("#lesson .predict")
    page.wait_for_selector("#question-mask")
    assert masked(page)
    assert page.text_content("#question-mask .question-prompt") == question["prompt"]
    page.click(f"#question-mask .question-option[data-value='{question['answer']}']")
    page.wait_for_selector("#lesson .question-result")
    assert page.query_selector("#question-mask") is None  # the chart is shown again
    result = page.text_content("#lesson .question-result") or ""
    assert ("Right" if lang == "en" else "答对") in result, result
    assert question["why"] in result and f"{question['measured']:.2f}" in result, result
    assert "✓" in (page.text_content("#lesson .predict") or "")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_number_question_says_what_the_numbers_say_when_wrong(server: Any, watched: Any, lang: str) -> None:
    page = watched.page
    page.set_viewport_size({"width": 1280, "height": 720})
    open_page(page, server.url, chapter="qkv", lang=lang)
    page.wait_for_selector("#lesson .predict")
    question = asked(server, "qkv", lang)
    page.click("#lesson .predict")
    page.fill("#question-mask .question-number", "12")
    page.click("#question-mask button[type='submit']")
    page.wait_for_selector("#lesson .question-wrong")
    result = page.text_content("#lesson .question-wrong") or ""
    assert f"{question['answer']:,}" in result and ("Not quite" if lang == "en" else "不对") in result, result
    # the skip button takes the mask away without an answer
    page.click("#lesson .predict")
    page.click("#question-mask .question-skip")
    wait_idle(page)
    assert page.query_selector("#question-mask") is None


SHIPPED_VIEWS = [(c.id, lang) for c in chapters() for lang in ("en", "zh")
                 if c.in_lang(lang).model in ("tiny-gpt", "tiny-translator")]


@pytest.mark.parametrize(("chapter", "lang"), SHIPPED_VIEWS)
def test_the_predict_button_keeps_the_chart_on_the_first_screen(server: Any, watched: Any, chapter: str,
                                                                 lang: str) -> None:
    """At 1280x720 the Predict button sits in the "look at" line: at least 200 px of the chart stay on screen."""
    page = watched.page
    page.set_viewport_size({"width": 1280, "height": 720})
    open_page(page, server.url, chapter=chapter, lang=lang)
    page.wait_for_selector("#lesson .predict")
    top = page.evaluate("() => document.getElementById('panel').getBoundingClientRect().top")
    assert top <= 720 - 200, (chapter, lang, top)
    assert not watched.errors, watched.errors
