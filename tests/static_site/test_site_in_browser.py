"""The recorded site (static_site/, issue 33) opens from file:// and from a plain static server.

One site is built per session from the tiny test models (each chapter's own view, EN and ZH, recorded by the
real pages). Every chapter then opens in both languages in presentation mode at 1280x720 with every request
outside the folder blocked: a chart is drawn, nothing is logged as an error, no placeholder shows. The recorded
answers equal the live API's byte for byte. A second, smaller site is recorded from the shipped checkpoints
(tiny-gpt, tiny-translator: two chapters): its claims are all there and hold no placeholder, and its share link
and exports work from the folder. A site with steppers and example sentences: test_site_stepper.py. `make site`
records SmolLM2's chapters too; `make site-check` checks that.
"""

from __future__ import annotations

import functools
import json
import pickle
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest

from lessons import chapters as lessons
from static_site.check import problems, recorded
from static_site.export import BUDGET_BYTES, SiteSummary, export_site

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.browser

SHIPPED_SUBSET = ("scale", "residual")  # tiny-gpt and tiny-translator chapters, with a lab link and 1-2 claims
PLACEHOLDERS = re.compile(r"\bundefined\b|\bnull\b|\bNaN\b|⟦|\{\w+\}")  # an unfilled value or {placeholder}


@pytest.fixture(scope="session")
def built(server: Any, browser: Any, tmp_path_factory: pytest.TempPathFactory) -> SiteSummary:
    """The site, recorded on the browser tests' own server app (tiny models)."""
    from app.factory import create_app

    # an app of its own on the same models: export_site runs an app's startup and shutdown, which on server.app
    # would shut down the inference pool that the browser tests after this file still use
    app = create_app(server.settings, server.registry)
    return export_site(tmp_path_factory.mktemp("site") / "site", app, log=lambda line: None, stepper=False,
                       browser=browser, examples=False)


@pytest.fixture(scope="session")
def static_host(built: SiteSummary) -> Iterator[str]:
    """The same folder behind Python's plain static file server (no app)."""
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(built.folder))
    handler.log_message = lambda *args: None  # type: ignore[attr-defined]
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture(scope="session")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> SiteSummary:
    """A recorded subset of the real site: the chapters of the shipped tiny models (tiny-gpt, tiny-translator),
    from the shipped checkpoints, each chapter's view and lab links in EN and ZH (SmolLM2's chapters: `make
    site-check` on the whole site, which takes minutes to record). Recorded in a process of its own: a second app
    in this process (its registry, its pool, its shutdown) disturbed the browser tests' server that runs after."""
    folder = tmp_path_factory.mktemp("shipped")
    script = (
        "import pickle\nfrom pathlib import Path\n"
        "from app.catalogue import build_registry\n"
        "from app.factory import create_app\n"
        "from app.settings import Settings\n"
        "from static_site.export import export_site\n"
        "settings = Settings(load_smollm2=False, load_minilm=False)\n"
        f"summary = export_site(Path({str(folder / 'site')!r}), create_app(settings, build_registry(settings)), "
        f"log=lambda line: None, stepper=False, chapters={list(SHIPPED_SUBSET)!r}, examples=False)\n"
        f"open({str(folder / 'summary.pickle')!r}, 'wb').write(pickle.dumps(summary))\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, cwd=ROOT, timeout=900)
    summary: SiteSummary = pickle.loads((folder / "summary.pickle").read_bytes())
    return summary


# the lab experiments that time themselves (lab/complexity.py, lab/recurrence.py): a live run measures the clock
# again, so their answers are compared by form (the same fields, lists of the same length), the rest byte for byte
CLOCKED = ("POST /api/lab/complexity ", "POST /api/lab/recurrence ")


def form(value: Any) -> Any:
    """A parsed answer's form: its fields and list lengths, each number (or a skipped one) as "number"."""
    if isinstance(value, dict):
        return {k: form(v) for k, v in value.items()}
    if isinstance(value, list):
        return [form(v) for v in value]
    return "number" if value is None or isinstance(value, (int, float)) else value  # None: a length skipped


def walk(browser: Any, base: str, inside: Any) -> None:
    """Every chapter in EN and ZH, presentation mode, 1280x720: drawn, no error, nothing outside, no placeholder."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    outside: list[str] = []

    def guard(route: Any) -> None:
        if inside(route.request.url):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    context.route("**/*", guard)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    page.set_default_timeout(30000)
    try:
        for lang in ("en", "zh"):
            for chapter in lessons.chapters():
                where = f"{lang} {chapter.id}"
                page.goto(f"{base}/index.html?{urlencode({'chapter': chapter.id, 'lang': lang, 'present': 1})}")
                page.wait_for_selector("body[data-ready='1']")
                page.wait_for_function("() => !document.body.classList.contains('busy')")
                assert page.locator("#panel .js-plotly-plot").count() > 0, f"{where}: no chart"
                assert page.is_hidden("#message"), f"{where}: {page.inner_text('#message')}"
                shown = page.inner_text("body")
                assert not PLACEHOLDERS.search(shown), f"{where}: {PLACEHOLDERS.search(shown)} on the page"
                banner = page.inner_text("#site-banner")
                assert "Transformer Explorer" in banner and "make run" in banner, where
                assert page.is_disabled("#text") and page.is_disabled("#run"), where
                assert not errors, f"{where}: {errors}"
                assert not outside, f"{where}: asked outside the site: {outside}"
    finally:
        context.close()


def test_every_chapter_opens_from_file(built: SiteSummary, browser: Any) -> None:
    folder = built.folder.resolve()
    walk(browser, folder.as_uri(), lambda url: url.startswith("file://") and Path(urlsplit(url).path).resolve()
         .is_relative_to(folder))


def test_every_chapter_opens_from_a_plain_static_server(static_host: str, browser: Any) -> None:
    walk(browser, static_host, lambda url: url.startswith(static_host + "/"))


def test_the_lab_panel_a_chapter_links_opens_from_file(built: SiteSummary, browser: Any) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    context.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file://") else r.abort())
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    try:
        page.goto(f"{built.folder.as_uri()}/index.html?chapter=scale&lang=zh")
        page.wait_for_selector("body[data-ready='1']")
        href = page.get_attribute("#lesson-lab-link", "href")
        assert href and href.startswith("lab.html?")
        page.click("#lesson-lab-link")
        page.wait_for_function("() => document.querySelector('#panel-scaling')?.dataset.rendered")
        assert page.locator("#panel-scaling .js-plotly-plot").count() > 0
        assert "make run" in page.inner_text("#site-banner")
        assert not errors, errors
    finally:
        context.close()


def test_the_share_card_of_a_site_gives_the_link_and_says_why_no_qr_code(built: SiteSummary, browser: Any) -> None:
    """A recorded site has no server to draw a QR code: its share card gives the chapter's link and says so."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    context.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file://") else r.abort())
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    try:
        page.goto(f"{built.folder.as_uri()}/index.html?chapter=scale&lang=zh")
        page.wait_for_selector("body[data-ready='1']")
        page.click("#chapter-share")
        page.wait_for_selector("#share-card[open]")
        assert page.locator("#share-card .share-qr img").count() == 0
        assert page.is_visible("#share-card .share-site")
        assert page.inner_text("#share-card .share-link").endswith("index.html?chapter=scale&lang=zh")
        assert not errors, errors
    finally:
        context.close()


def test_the_views_a_chapter_opens_with_a_button_open_from_file(built: SiteSummary, browser: Any) -> None:
    """A chapter's buttons that open another view here (the misconceptions chapter's translator views) work in the
    site: the view is drawn, with no message."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    context.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file://") else r.abort())
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    clicked = []
    try:
        for lang in ("en", "zh"):
            for chapter in lessons.chapters():
                url = f"{built.folder.as_uri()}/index.html?{urlencode({'chapter': chapter.id, 'lang': lang})}"
                page.goto(url)
                page.wait_for_selector("body[data-ready='1']")
                buttons = page.eval_on_selector_all("#lesson button.live-link", "(bs) => bs.map((b) => b.dataset.live)")
                for live in buttons:
                    page.goto(url)
                    page.wait_for_selector("body[data-ready='1']")
                    page.wait_for_function("() => !document.body.classList.contains('busy')")
                    stage = page.get_attribute("#stage", "data-stage")
                    page.click(f"#lesson button.live-link[data-live='{live}']")
                    page.wait_for_function(f"() => document.querySelector('#stage').dataset.stage !== '{stage}' || "
                                           "!document.querySelector('#message').hidden")
                    page.wait_for_function("() => !document.body.classList.contains('busy')")
                    assert page.is_hidden("#message"), (lang, chapter.id, live, page.inner_text("#message"))
                    assert page.locator("#panel .js-plotly-plot").count() > 0, (lang, chapter.id, live)
                    clicked.append(f"{lang} {chapter.id} {live}")
        assert len(clicked) >= 4, clicked  # the misconceptions chapter's two translator views, in EN and ZH
        assert not errors, errors
    finally:
        context.close()


def test_recorded_answers_are_the_live_answers_byte_for_byte(built: SiteSummary, server: Any) -> None:
    from fastapi.testclient import TestClient

    answers = {k: v for k, v in recorded(built.folder).items() if " /api/" in k}
    clocked: list[str] = []
    assert built.answers >= len(answers) > 20  # built.answers also counts the text files the page read
    with TestClient(server.app) as client:
        for key, text in answers.items():
            method, rest = key.split(" ", 1)
            url, body = rest.split(" ", 1)
            live = client.request(method, url, content=body.encode("utf-8") or None,
                                  headers={"Content-Type": "application/json"} if body else {})
            assert live.status_code == 200, key[:120]
            if key.startswith(CLOCKED):
                clocked.append(key)
                assert form(live.json()) == form(json.loads(text)), key[:120]
            else:
                assert live.content == text.encode("utf-8"), key[:120]
    assert len(clocked) < len(answers) / 10, clocked


def test_a_missing_answer_says_it_needs_the_server(built: SiteSummary, browser: Any) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    try:
        asked = urlencode({"model": "gpt", "text": "never recorded", "lang": "zh"})
        page.goto(f"{built.folder.as_uri()}/index.html?{asked}")
        page.wait_for_selector("#message:not([hidden])")
        assert "make run" in page.inner_text("#message") and "服务器" in page.inner_text("#message")
    finally:
        page.close()


def test_the_site_is_under_its_budget(built: SiteSummary) -> None:
    size = sum(p.stat().st_size for p in built.folder.rglob("*") if p.is_file())
    assert size == built.bytes < BUDGET_BYTES


def test_the_shipped_models_answers_hold_every_claim_and_no_placeholder(shipped: SiteSummary) -> None:
    assert set(shipped.models) >= {"tiny-gpt", "tiny-translator"}, shipped.models
    assert problems(shipped.folder, chapters=list(SHIPPED_SUBSET), steppers=False) == []
    # recorded without steppers: the check says so, chapter by chapter, when steppers are expected
    lacking = problems(shipped.folder, chapters=list(SHIPPED_SUBSET))
    assert sorted(line.split(":")[0] for line in lacking) == sorted(
        f"{lang} {chapter}" for lang in ("en", "zh") for chapter in SHIPPED_SUBSET), lacking
    assert not shipped.refused and not shipped.errors, (shipped.refused, shipped.errors)


def test_the_check_finds_a_missing_claim_and_a_placeholder(shipped: SiteSummary, tmp_path: Path) -> None:
    import json
    import shutil

    from static_site.check import claims_key
    from static_site.data_files import data_file

    copy = tmp_path / "site"
    shutil.copytree(shipped.folder, copy)
    (copy / data_file(claims_key("scale", "zh"))).unlink()  # a chapter without its claims
    en = claims_key("residual", "en")  # a claim whose line kept a hole
    answer = json.loads(recorded(copy)[en])
    answer["claims"][0]["line"] += " {weight}"
    (copy / data_file(en)).write_text(f"TE_SITE.put({json.dumps(en)}, {json.dumps(json.dumps(answer))});\n",
                                     encoding="ascii")
    found = problems(copy, chapters=list(SHIPPED_SUBSET), steppers=False)
    assert any(line.startswith("zh scale: no claims recorded") for line in found), found
    assert any("'{weight}'" in line for line in found), found


def test_a_share_link_and_the_exports_work_from_file(shipped: SiteSummary, browser: Any) -> None:
    """The link the page shares reopens the same view from the folder; the PNG, CSV and JSON exports download."""
    folder = shipped.folder.resolve()
    context = browser.new_context(viewport={"width": 1280, "height": 720}, accept_downloads=True)
    context.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file://") else r.abort())
    # what the page puts on the clipboard (a headless page's clipboard may refuse it)
    context.add_init_script("navigator.clipboard.writeText = async (text) => { window.copied = text; };")
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    try:
        page.goto(f"{folder.as_uri()}/index.html?chapter=scale&lang=zh")
        page.wait_for_selector("body[data-ready='1']")
        page.wait_for_function("() => !document.body.classList.contains('busy')")
        page.click("#copy-link")
        page.wait_for_function("() => window.copied")
        link = page.evaluate("() => window.copied")
        assert link.startswith(folder.as_uri() + "/index.html?") and "lang=zh" in link, link
        shown = page.inner_text("#stage-title")
        for card in ("iv-before", "iv-after"):  # the chapter's two runs, without and with the change
            with page.expect_download() as download:
                page.click(f"#panel section[data-key='{card}'] .export-csv")
            lines = Path(download.value.path()).read_text(encoding="utf-8").splitlines()
            assert len(lines) > 3 and lines[0].startswith(",") and "我" in lines[0], lines[:2]
            with page.expect_download() as download:
                page.click(f"#panel section[data-key='{card}'] .export-json")
            data = json.loads(Path(download.value.path()).read_text(encoding="utf-8"))
            assert len(data["z"]) == len(lines) - 1 and "我" in "".join(data["cols"]), data.keys()
        page.locator("#panel .js-plotly-plot").first.hover()
        with page.expect_download() as download:
            page.locator("#panel .modebar-btn[data-title*='PNG']").first.click()
        assert Path(download.value.path()).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        again = context.new_page()
        again.goto(link)
        again.wait_for_selector("body[data-ready='1']")
        again.wait_for_function("() => !document.body.classList.contains('busy')")
        assert again.inner_text("#stage-title") == shown and again.is_hidden("#message")
        assert again.locator("#panel .js-plotly-plot").count() > 0
        assert not errors, errors
    finally:
        context.close()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_question_is_predicted_then_revealed_from_file(shipped: SiteSummary, browser: Any, lang: str) -> None:
    """The site offers the chapter's questions from its recorded answer: a student alone predicts, then sees the
    chart with the measured value, checked on the page (the site answers nothing it did not record)."""
    folder = shipped.folder.resolve()
    question = json.loads(recorded(folder)[f"GET /api/lessons/scale/questions?lang={lang} "])["questions"][0]
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    context.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file://") else r.abort())
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    try:
        page.goto(f"{folder.as_uri()}/index.html?chapter=scale&lang={lang}")
        page.wait_for_selector("#lesson .predict")
        page.click("#lesson .predict")
        page.click(f"#question-mask .question-option[data-value='{question['answer']}']")
        page.wait_for_selector("#lesson .question-right")
        assert question["why"] in (page.text_content("#lesson .question-right") or "")
        assert page.query_selector("#question-mask") is None and not errors, errors
    finally:
        context.close()
