"""For the teacher (issue 41, item 6; review 4 finding 19): the lesson bar's title is a menu of every chapter, in
the page's language and usable from the keyboard; printed, a chapter is a handout (its text, claims and chart, no
button, no stage list); its share card gives the chapter's link and a QR code drawn by the server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from app.settings import ROOT
from tests.browser.helpers import open_page, wait_idle
from tests.browser.teach_models import CHAPTER_IDS

pytestmark = pytest.mark.browser

TITLES = {lang: json.loads((ROOT / "static" / "text" / f"{lang}.json").read_text(encoding="utf-8"))["ui"]
          for lang in ("en", "zh")}


@pytest.fixture(scope="module")
def shipped_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The tiny test models and the shipped ones (tiny-gpt: chapter 2 and its measured claim)."""
    from tests.browser.models import ServerThread
    from tests.conftest import free_port

    srv = ServerThread(free_port(), tmp_path_factory.mktemp("lesson-tools"), extra_models=True)
    yield srv.start()
    srv.stop()


def opened(page: Any, before: str) -> None:
    page.wait_for_function("(b) => document.querySelector('#stage').dataset.rendered !== b", arg=before)
    wait_idle(page)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_chapter_menu_jumps_to_any_chapter(shipped_server: Any, watched: Any, lang: str) -> None:
    page = watched.page
    open_page(page, shipped_server.url, chapter="qkv", lang=lang)
    options = page.eval_on_selector_all("#chapter-menu option", "els => els.map(e => e.textContent)")
    assert options == [f"{i}. {TITLES[lang][f'lesson.{c}.title']}" for i, c in enumerate(CHAPTER_IDS, start=1)]
    assert page.eval_on_selector("#chapter-menu", "e => e.labels[0].textContent").startswith(
        "Lesson · chapter 2 of" if lang == "en" else "课程 · 第 2 章")
    before = page.get_attribute("#stage", "data-rendered")
    page.select_option("#chapter-menu", str(len(CHAPTER_IDS) - 2))  # by mouse: a chapter far away
    opened(page, before)
    assert page.get_attribute("#lesson", "data-chapter") == CHAPTER_IDS[-2]
    assert f"chapter={CHAPTER_IDS[-2]}" in page.url
    before = page.get_attribute("#stage", "data-rendered")
    page.focus("#chapter-menu")  # by keyboard: the arrow keys choose the next chapter
    page.keyboard.press("ArrowDown")
    opened(page, before)
    assert page.get_attribute("#lesson", "data-chapter") == CHAPTER_IDS[-1]
    assert page.eval_on_selector("#chapter-menu", "e => e.value") == str(len(CHAPTER_IDS) - 1)
    assert not watched.errors, watched.errors


@pytest.mark.parametrize("present", [0, 1])
def test_a_printed_chapter_is_a_handout(shipped_server: Any, watched: Any, present: int) -> None:
    page = watched.page
    page.set_viewport_size({"width": 1280, "height": 720})
    open_page(page, shipped_server.url, chapter="qkv", lang="en", present=present)
    shown = ["#panel .plot", "#lesson [data-claims='screen'] li", "#lesson .lesson-body", "#lesson .lesson-look"]
    gone = ["#next", "#prev", "#chapter-next", "#chapter-share", "#stage-list", ".sidebar", "#run", "#text",
            ".top-actions"]
    assert page.is_visible(".sidebar") != bool(present) and page.is_visible("#chapter-next")  # on screen: all there
    page.emulate_media(media="print")
    for selector in shown:
        assert page.is_visible(selector), selector
    for selector in gone:
        assert page.is_hidden(selector), selector
    # each chart is scaled to fit an A4 page's printable width (700 px at 96 px per inch; side by side they wrap)
    widths = page.eval_on_selector_all("#panel .main-svg", "els => els.map(e => e.getBoundingClientRect().width)")
    assert widths and max(widths) <= 700 + 1, widths
    pdf = page.pdf(format="A4")
    assert pdf.startswith(b"%PDF") and pdf.count(b"/Type /Page") >= 2  # the page tree and at least one page
    page.emulate_media(media="screen")
    assert page.is_visible("#chapter-next")
    assert not watched.errors, watched.errors


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_share_card_gives_the_link_and_its_qr_code(shipped_server: Any, watched: Any, lang: str) -> None:
    page = watched.page
    open_page(page, shipped_server.url, chapter="softmax", lang=lang)
    page.click("#chapter-share")
    page.wait_for_selector("#share-card[open] .share-qr img")
    link = page.inner_text("#share-card .share-link")
    assert link == f"{shipped_server.url}/?chapter=softmax&lang={lang}"
    assert TITLES[lang]["lesson.softmax.title"] in page.inner_text("#share-card h2")
    assert page.eval_on_selector("#share-card .share-qr img", "e => e.naturalWidth") > 100  # the SVG drew
    assert page.is_visible("#share-card .share-local")  # 127.0.0.1 opens on this computer only: the card says so
    page.keyboard.press("Escape")
    page.wait_for_selector("#share-card:not([open])", state="attached")
    assert not watched.errors, watched.errors
