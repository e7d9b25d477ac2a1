"""The lesson path on the page: every chapter rendered for every model, opened by number or id, its chart
on the first screen at 1280×720, its text in presentation mode, and the charts the chapters point at."""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import open_page
from tests.browser.teach_models import BROKEN, CHAPTER_IDS, CONFIGS, HF_NAME, SHIPPED, api, teach_server_for

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def teach_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield from teach_server_for(tmp_path_factory)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_lesson_path_opens_every_chapter(server: Any, watched: Any, lang: str) -> None:
    page = watched.page
    open_page(page, server.url, chapter="why", lang=lang)
    for i, cid in enumerate(CHAPTER_IDS):
        if i:
            before = page.get_attribute("#stage", "data-rendered")
            page.click("#chapter-next")
            page.wait_for_function("(b) => document.querySelector('#stage').dataset.rendered !== b", arg=before)
            page.wait_for_function("() => !document.body.classList.contains('busy')")
        assert page.get_attribute("#lesson", "data-chapter") == cid
        assert f"chapter={cid}" in page.url
        assert page.is_hidden("#message"), page.inner_text("#message")
        assert page.inner_text("#lesson .lesson-look").strip()
        if cid in ("ffn", "efficiency"):
            assert page.get_attribute("#sheet", "data-sheet") == "params"
            assert page.locator("#sheet .params-components tbody tr").count() >= 2
        if cid == "architectures":
            assert page.locator("#sheet .arch-table tbody tr").count() == len(api(server, "/api/models"))
    assert not watched.errors, watched.errors


def test_presentation_chart_fills_a_projector(server: Any, watched: Any, artifacts: Path) -> None:
    page = watched.page
    page.set_viewport_size({"width": 1280, "height": 720})
    open_page(page, server.url, stage="softmax", layer=0, present=1, text="我爱北京天安门广场。")
    top, height = page.eval_on_selector(
        "#panel .plot", "e => { const r = e.getBoundingClientRect(); return [r.top, r.height]; }"
    )
    page.screenshot(path=str(artifacts / "present-1280x720.png"))
    assert height >= 0.55 * 720 and top + height <= 720 + 2, (top, height)
    assert page.is_hidden("#explain")
    page.keyboard.press("e")
    page.wait_for_function("() => document.body.classList.contains('explain-open')")
    assert page.is_visible("#explain")
    assert not watched.errors, watched.errors


RENDER_CHAPTERS = """async ({name, lang, text}) => {
  const { CHAPTERS } = await import('/static/js/lessons.js');
  const { lessonText } = await import('/static/js/teach.js');
  const { loadTexts } = await import('/static/js/shared/i18n.js');
  const texts = await loadTexts(lang, lang); // the explorer's words: static/text/<lang>.json + shared.<lang>.json
  const info = await (await fetch(`/api/models/${encodeURIComponent(name)}`)).json();
  const tok = await (await fetch('/api/tokenize', {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: name, text }) })).json();
  return { n: tok.tokens.length,
           chapters: CHAPTERS.map((c) => ({
             id: c.id, ...lessonText(texts, info, tok.tokens, name, c.id, { layer: c[lang].layer, head: c[lang].head }),
           })) };
}"""


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", SHIPPED + [HF_NAME] + list(CONFIGS))
def test_every_chapter_states_the_models_numbers(teach_server: Any, watched: Any, name: str, lang: str) -> None:
    """Each chapter's title, body and 'what to look at', written for this model, with its numbers."""
    if name not in [m["name"] for m in api(teach_server, "/api/models")]:
        pytest.skip(f"{name} is not in this checkout's weights")
    page = watched.page
    open_page(page, teach_server.url, model="gpt", text="ab")
    info = api(teach_server, f"/api/models/{name}")
    cfg = info["config"]
    out = page.evaluate(RENDER_CHAPTERS, {"name": name, "lang": lang, "text": "我爱你"})
    n = out["n"]
    by_id = {c["id"]: c for c in out["chapters"]}
    assert list(by_id) == CHAPTER_IDS
    for c in out["chapters"]:
        whole = " ".join(c[f] for f in ("title", "body", "look"))
        assert all(c[f].strip() for f in ("title", "body", "look")), c
        assert not BROKEN.search(whole), (c["id"], whole)
        assert "第 0" not in whole, (c["id"], whole)
    d, heads, d_head = cfg["d_model"], info["n_heads"], info["d_head"]
    qkv, scores, residual = by_id["qkv"]["body"], by_id["scores"]["body"], by_id["residual"]["body"]
    if lang == "en":
        assert f"{n} tokens, d_model {d} = {heads} heads × {d_head}" in qkv, qkv
        assert f"its table is {n} × {n}" in scores and f"each of the {heads} heads" in scores, scores
        placement = "Post-Norm" if cfg["norm_placement"] == "post" else "Pre-Norm"
        assert f"{name} is {placement}" in residual, residual
        assert (
            "O(n²·d)" in by_id["efficiency"]["body"] and "memory for the table as O(n²)" in by_id["efficiency"]["body"]
        )
    else:
        assert f"{n} 个 Token，d_model {d} = {heads} 个头 × 每头 {d_head} 维" in qkv, qkv
        assert f"{n} × {n}" in scores, scores
        assert ("后置归一化" if cfg["norm_placement"] == "post" else "前置归一化") in residual.split("：")[0] + residual
        assert f"{name} 和" in residual, residual
    assert not watched.errors, watched.errors


@pytest.mark.parametrize("chapter", ["6", "softmax"])
def test_a_chapter_opens_by_number_or_by_id(server: Any, watched: Any, chapter: str) -> None:
    page = watched.page
    open_page(page, server.url, chapter=chapter)
    assert page.get_attribute("#lesson", "data-chapter") == "softmax"
    assert page.inner_text("#lesson .lesson-kicker").startswith("Lesson · chapter 6 of")
    assert "chapter=softmax" in page.url
    assert not watched.errors, watched.errors


def test_lesson_bar_never_prints_null(server: Any, watched: Any) -> None:
    """A chapter without a picked head has no pick line at all (it printed 'null' before)."""
    page = watched.page
    for cid in ("why", "scores", "softmax"):
        open_page(page, server.url, chapter=cid)
        assert not BROKEN.search(page.inner_text("#lesson")), page.inner_text("#lesson")
        texts = page.eval_on_selector_all("#lesson p", "els => els.map(e => e.textContent.trim())")
        assert all(texts), texts
    assert not watched.errors, watched.errors


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_chapter_shows_its_chart_on_the_first_screen(server: Any, watched: Any, lang: str) -> None:
    """At 1280×720, outside presentation mode, at least 200 px of each chapter's chart is on screen."""
    page = watched.page
    page.set_viewport_size({"width": 1280, "height": 720})
    for cid in CHAPTER_IDS:
        open_page(page, server.url, chapter=cid, lang=lang)
        page.wait_for_timeout(50)  # the chapter scrolls to its lesson bar on the next frame
        top = page.eval_on_selector("#panel .plot", "e => e.getBoundingClientRect().top")
        assert top <= 720 - 200, (cid, top)
        links = page.locator("a.lab-link:visible").count()
        assert links <= 1, (cid, links)  # "try it in the lab" once per chapter
    assert not watched.errors, watched.errors


def test_presentation_shows_the_chapter_text_on_e(server: Any, watched: Any) -> None:
    page = watched.page
    page.set_viewport_size({"width": 1280, "height": 720})
    open_page(page, server.url, chapter="softmax", present=1, lang="zh")  # 我爱北京天安门广场。: 11 tokens
    assert page.is_hidden("#lesson .lesson-body")
    assert "POST" not in page.inner_text("body") and "/api/" not in page.inner_text("body")
    page.keyboard.press("e")
    page.wait_for_function("() => document.body.classList.contains('explain-open')")
    assert page.is_visible("#lesson .lesson-body") and page.is_visible("#explain")
    size = page.eval_on_selector(
        "#panel .plot .textpoint text, #panel .plot g.hm text", "e => parseFloat(getComputedStyle(e).fontSize)"
    )
    assert size >= 14, size  # cell numbers of an 11-token heatmap, read from the back of a room
    assert not watched.errors, watched.errors


def test_positions_chapter_draws_angles_one_sided_and_every_curve(server: Any, watched: Any) -> None:
    page = watched.page
    open_page(page, server.url, chapter="positions")
    angles = page.evaluate(
        "() => { const d = document.querySelector('#panel .plot[data-key=angles]').data[0]; "
        "return [d.zmin, d.zmax, Math.min(...d.z.flat())]; }"
    )
    assert angles[0] == 0 and angles[2] >= 0 and angles[1] > 0, angles  # θ ≥ 0: no diverging ±scale
    styles = page.evaluate(
        "() => document.querySelector('#panel .plot[data-key=curves]').data.map((t) => [t.line.dash, t.marker.symbol])"
    )
    assert len({tuple(s) for s in styles}) == len(styles) >= 2, styles  # curves lying on each other stay apart
    assert not watched.errors, watched.errors


def test_chinese_axis_title_fits_its_chart_in_presentation(server: Any, watched: Any) -> None:
    page = watched.page
    page.set_viewport_size({"width": 1280, "height": 720})
    open_page(page, server.url, chapter="scores", present=1, lang="zh")
    box = page.eval_on_selector(
        "#panel .plot .ytitle", "e => { const r = e.getBoundingClientRect(); return [r.top, r.bottom]; }"
    )
    svg = page.eval_on_selector(
        "#panel .plot .main-svg", "e => { const r = e.getBoundingClientRect(); return [r.top, r.bottom]; }"
    )
    assert svg[0] <= box[0] and box[1] <= svg[1], (box, svg)
    assert not watched.errors, watched.errors


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_why_chapter_counts_rnn_against_attention_on_the_sentence(server: Any, watched: Any, lang: str) -> None:
    """The counts follow from the formulas on the sentence's own tokens, and the caption says so."""
    page = watched.page
    open_page(page, server.url, chapter="why", lang=lang)
    model, text = page.input_value("#model"), page.input_value("#text")
    n = len(api(server, "/api/tokenize", {"model": model, "text": text})["tokens"])
    info = api(server, f"/api/models/{model}")
    cells = page.eval_on_selector_all(
        "#lesson .lesson-demo tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
    )
    assert [row[1:] for row in cells[:3]] == [[str(n), "1"], [str(n - 1), "1"], ["0", str(n * (n + 1) // 2)]], cells
    assert str(info["config"]["d_model"]) in cells[3][1] and str(n) in cells[3][2], cells
    caption = page.inner_text("#lesson .lesson-demo caption")
    assert str(n) in caption and ("not measured" in caption if lang == "en" else "非实测" in caption), caption
    assert not watched.errors, watched.errors


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_why_chapter_opens_a_real_deltanet_state(teach_server: Any, watched: Any, lang: str) -> None:
    """Issue 43: the RNN came back, with a matrix for a state: the chapter's live link opens the explorer on
    tiny-deltanet's DeltaNet state stage (layer 2, head 2, as the claim), the chapter still open, and its lab link
    opens the linear-attention panel on that head."""
    page = watched.page
    open_page(page, teach_server.url, chapter="why", lang=lang)
    hrefs = page.eval_on_selector_all("#lesson .lesson-live a", "els => els.map(e => e.getAttribute('href'))")
    assert any("panel=linear_attention" in h and "linear_attention.dn_head=2" in h for h in hrefs), hrefs
    before = page.get_attribute("#stage", "data-rendered")
    page.click("#lesson button[data-live=state]")
    page.wait_for_function("(b) => document.querySelector('#stage').dataset.rendered !== b", arg=before)
    page.wait_for_function("() => !document.body.classList.contains('busy')")
    assert page.input_value("#model") == "tiny-deltanet", page.url
    assert "stage=dn_state" in page.url and "chapter=why" in page.url and "layer=2" in page.url, page.url
    assert page.is_hidden("#message"), page.inner_text("#message")
    assert page.locator("#panel .plot").count() >= 1
    assert not watched.errors, watched.errors

@pytest.mark.parametrize("lang", ["en", "zh"])
def test_misconceptions_chapter_opens_both_kinds_of_attention_and_the_lab(server: Any, watched: Any, lang: str) -> None:
    """Misconception 3 live: the translator's cross-attention (decoder → encoder) and its encoder's
    self-attention, the chapter still open; 4 (and 1/6) as links to their lab panels on this model and sentence."""
    page = watched.page
    open_page(page, server.url, chapter="misconceptions", lang=lang)
    model, text = page.input_value("#model"), page.input_value("#text")
    hrefs = page.eval_on_selector_all("#lesson .lesson-live a", "els => els.map(e => e.getAttribute('href'))")
    assert [h.split("?")[0] for h in hrefs] == ["/lab", "/lab"], hrefs
    assert "panel=attention_flow" in hrefs[0] and "panel=head_count" in hrefs[1] and f"model={model}" in hrefs[1], hrefs
    assert text.replace(" ", "+") in page.evaluate("(h) => decodeURIComponent(h)", hrefs[1]), (text, hrefs)
    for link, stage in (("cross", "decoder.cross_softmax"), ("self", "encoder.softmax")):
        before = page.get_attribute("#stage", "data-rendered")
        page.click(f"#lesson button[data-live={link}]")
        page.wait_for_function("(b) => document.querySelector('#stage').dataset.rendered !== b", arg=before)
        page.wait_for_function("() => !document.body.classList.contains('busy')")
        assert f"stage={stage}" in page.url and "chapter=misconceptions" in page.url, page.url
        info = api(server, f"/api/models/{page.input_value('#model')}")
        assert info["architecture"] == "encoder-decoder"
        assert page.is_hidden("#message"), page.inner_text("#message")
        assert page.locator("#panel .plot").count() >= 1
    look = page.inner_text("#lesson .lesson-look")
    assert ("cross-attention" in look) if lang == "en" else ("交叉注意力" in look), look
    assert not watched.errors, watched.errors


def test_a_lab_link_that_needs_a_decoder_opens_one(server: Any, watched: Any) -> None:
    """The architectures chapter shows the translator; its "why decoder-only won" link opens the objectives
    panel on a decoder (which that panel needs) and a sentence; the efficiency chapter's linear-attention
    link keeps the chapter's own decoder and sentence."""
    page = watched.page
    open_page(page, server.url, chapter="architectures", lang="en")
    href = page.get_attribute("#lesson .lesson-live a[data-live=objectives]", "href")
    query = dict(urllib.parse.parse_qsl(href.split("?", 1)[1].split("#")[0]))
    assert query["panel"] == "objectives" and query["text"]
    assert api(server, f"/api/models/{query['model']}")["architecture"] == "decoder", query
    open_page(page, server.url, chapter="efficiency", lang="en")
    href = page.get_attribute("#lesson .lesson-live a[data-live=linear]", "href")
    query = dict(urllib.parse.parse_qsl(href.split("?", 1)[1].split("#")[0]))
    assert query["panel"] == "linear_attention" and query["model"] == page.input_value("#model")
    assert query["text"] == page.input_value("#text")
    assert not watched.errors, watched.errors
