"""The explorer page in a real browser: every stage renders with real numbers, links, languages, safety."""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import expected_shape, label, open_page, press_and_wait, run_text, tick_texts, wait_idle
from tests.browser.models import XSS_TEXTS

pytestmark = pytest.mark.browser

ENGLISH = "The animal didn't cross the street because it was too tired"
CHINESE = "我爱北京天安门广场。"


def api(server: Any, path: str, body: dict[str, Any] | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(server.url + path, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request) as response:
        return json.loads(response.read())


def sizes_for(name: str, info: dict[str, Any], n_source: int, n_target: int | None) -> dict[str, int]:
    cfg = info["config"]
    encdec = info["architecture"] == "encoder-decoder"
    own = n_target if encdec and (name.startswith("decoder.") or name == "hook_logits") else n_source
    cross = ".cross_attn." in name
    assert own is not None
    return {
        "pos": n_source if cross and re.search(r"hook_(k|v)$", name) else own,
        "q_pos": own,
        "k_pos": n_source if cross else own,
        "head": info["n_heads"],
        "kv_head": info["n_kv_heads"],
        "d_head": info["d_head"],
        "d_model": cfg["d_model"],
        "d_mlp": cfg["d_mlp"] or 4 * cfg["d_model"],
        "d_vocab": info["vocab_size"],
    }


def walk_all_stages(
    watched: Any, server: Any, model: str, text: str, target: str | None = None
) -> list[tuple[str, str]]:
    """Type the text, then press → through every stage, checking plots, axis labels and shape badges."""
    page = watched.page
    open_page(page, server.url, model=model, **({"target": target} if target else {}))
    if target:
        page.fill("#target", target)
    run_text(page, text)
    info = api(server, f"/api/models/{model}")
    dims = {s["name"]: s["dims"] for s in info["stages"]}
    body = {"model": model, "text": text, **({"target_text": target} if target else {})}
    tokens = api(server, "/api/tokenize", body)
    source, target_tokens = tokens["tokens"], tokens.get("target_tokens")
    chips = page.eval_on_selector_all("#tokens .token-row:first-child .chip-text", "els => els.map(e => e.textContent)")
    assert len(chips) == len(source)

    total = int(re.search(r"of (\d+)", page.inner_text("#stage-kicker")).group(1))  # type: ignore[union-attr]
    visited: list[tuple[str, str]] = []
    for step in range(total):
        if step:
            press_and_wait(page, "ArrowRight")
        stage = page.get_attribute("#stage", "data-stage") or ""
        layer = page.get_attribute("#stage", "data-layer") or ""
        visited.append((stage, layer))
        assert f"Step {step + 1} of {total}" in page.inner_text("#stage-kicker")
        assert page.inner_text("#stage-title").strip() not in ("", "…")
        assert page.inner_text("#explain").strip(), f"{stage}: no explanation"
        shown = " ".join(page.inner_text(sel) for sel in ("#stage-title", "#formula", "#explain", "#stage-list"))
        assert not re.search(r"⟦|undefined|\{\w+\}", shown), (stage, shown)  # every placeholder filled
        plots = page.locator("#panel .plot").count()
        assert plots >= 1 or stage.endswith("pos"), f"{stage}: nothing drawn"
        assert page.locator("#panel .plot .main-svg").count() >= plots, f"{stage}: a plot did not render"
        # shape badges say the real tensor's named dims and sizes
        badges = page.eval_on_selector_all(
            "#panel .shape-badge", "els => els.map(e => [e.dataset.name, e.querySelector('.shape-dims').textContent])"
        )
        checked = 0
        for name, text_shown in badges:
            if name in dims:
                sizes = sizes_for(name, info, len(source), len(target_tokens) if target_tokens else None)
                assert text_shown == expected_shape(dims[name], sizes), (stage, name, text_shown)
                checked += 1
        assert checked or stage.endswith("pos"), f"{stage}: no shape badge"
        # token labels on the axes (the logits chart ranks vocabulary entries instead)
        if stage != "logits":
            own = target_tokens if stage.startswith("decoder.") and target_tokens else source
            ticks = tick_texts(page)
            assert label(0, own[0]["text"]) in ticks, (stage, ticks[:6])
            assert label(len(own) - 1, own[-1]["text"]) in ticks, (stage, ticks[-6:])
    assert visited[-1][0] == "logits"
    assert page.is_disabled("#next")
    assert not watched.errors, watched.errors
    return visited


def block_steps(visited: list[tuple[str, str]], stack: str, layer: str) -> list[str]:
    prefix = f"{stack}." if stack else ""
    return [
        s[len(prefix):] for s, at in visited if at == layer and (s.startswith(prefix) if prefix else "." not in s)
    ]


def test_english_every_stage_of_every_block(watched: Any, server: Any) -> None:
    visited = walk_all_stages(watched, server, "gpt", ENGLISH)
    layer0, layer1 = block_steps(visited, "", "0"), block_steps(visited, "", "1")
    assert layer0 == layer1  # the same stops in every block
    # Pre-Norm decoder with RoPE: norm first, rotation after the projections, no cross-attention
    assert layer0[:3] == ["ln1", "qkv", "rope"]
    assert layer0 == ["ln1", "qkv", "rope", "scores", "scale", "mask", "softmax", "z", "attn_out", "resid_mid",
                      "ln2", "ffn_in", "ffn_act", "ffn_out", "resid_post"]
    assert [s for s, _ in visited[:3]] == ["tokens", "embed", "pos"]
    assert [s for s, _ in visited[-2:]] == ["ln_final", "logits"]


def test_chinese_encoder_decoder_every_stage(watched: Any, server: Any) -> None:
    visited = walk_all_stages(watched, server, "translator", CHINESE, target="我爱你")
    encoder, decoder = block_steps(visited, "encoder", "0"), block_steps(visited, "decoder", "0")
    # Post-Norm: attention -> add -> norm
    assert encoder.index("resid_mid") < encoder.index("ln1") < encoder.index("ffn_in")
    assert not any(s.startswith("cross_") for s in encoder)
    order = [decoder.index(s) for s in ("resid_mid", "cross_qkv", "cross_softmax", "ffn_in")]
    assert order == sorted(order)
    stages = [s for s, _ in visited]
    assert stages.index("encoder.ln_final") < stages.index("decoder.tokens")
    assert "我" in watched.page.inner_text("#tokens")


def test_explanations_state_the_models_numbers(watched: Any, server: Any) -> None:
    """The numbers in the text come from GET /api/models/{name}, in both languages."""
    page = watched.page
    info = api(server, "/api/models/gpt")
    d_model, n_heads, d_head = info["config"]["d_model"], info["n_heads"], info["d_head"]
    open_page(page, server.url, model="gpt", text=ENGLISH, stage="qkv", layer=0, lang="en")
    assert f"The {d_model} numbers are split into {n_heads} heads of {d_head}" in page.inner_text("#explain")
    open_page(page, server.url, model="gpt", text=CHINESE, stage="scale", layer=1, lang="zh")
    assert f"S / √{d_head} = S / {d_head ** 0.5:.2f}" in page.inner_text("#formula")
    assert page.inner_text("#stage-title") == "除以 √d_k 缩放"
    open_page(page, server.url, model="gpt", text=CHINESE, stage="attn_out", layer=1, lang="zh")
    assert f"{n_heads} × {d_head} = {d_model}" in page.inner_text("#explain")
    assert not watched.errors, watched.errors


def test_copied_link_opens_the_same_view(watched: Any, server: Any, context: Any) -> None:
    page = watched.page
    open_page(page, server.url, model="gpt")
    run_text(page, CHINESE)
    page.click("button.stage-item[data-stage='softmax']")
    wait_idle(page)
    page.select_option("#layer", "1")
    wait_idle(page)
    page.select_option("#head", "2")
    wait_idle(page)
    page.wait_for_function("() => location.search.includes('head=2') && location.search.includes('layer=1')")
    link = page.url
    other = context.new_page()
    try:
        other.goto(link)
        other.wait_for_selector("body[data-ready='1']")
        wait_idle(other)
        assert other.get_attribute("#stage", "data-stage") == "softmax"
        assert other.get_attribute("#stage", "data-layer") == "1"
        assert other.input_value("#head") == "2"
        assert other.input_value("#text") == CHINESE
        assert other.inner_text("#stage-title") == page.inner_text("#stage-title")
        assert "Head 2" in other.inner_text("#panel .chart-head h3")
        # the checkpoint's head scores name this head, and the probe that measured it
        assert "previous-token · random-token probe" in other.inner_text("#head option:checked")
        note = other.inner_text("#panel .chart-note")
        assert "On the random-token probe (random tokens typed twice)" in note
        assert "previous-token, with score 0.55" in note
    finally:
        other.close()
    assert not watched.errors, watched.errors


def test_language_switch(watched: Any, server: Any) -> None:
    page = watched.page
    open_page(page, server.url, model="gpt", text=ENGLISH, stage="scale", layer=0, lang="en")
    assert page.inner_text("#stage-title") == "Scale by √d_k"
    before = page.get_attribute("#stage", "data-rendered")
    page.click("#lang")
    page.wait_for_function("(b) => document.querySelector('#stage').dataset.rendered !== b", arg=before)
    assert page.get_attribute("html", "lang") == "zh-CN"
    assert page.inner_text("#stage-title") == "除以 √d_k 缩放"
    assert "软" in page.inner_text("#explain") or "softmax" in page.inner_text("#explain")
    assert page.inner_text("#next") == "下一步 ▶"
    assert "lang=zh" in page.url
    ticks = " ".join(page.eval_on_selector_all("#panel .plot .g-xtitle text, #panel .plot .g-ytitle text",
                                                "els => els.map(e => e.textContent)"))
    # Query（在看的 Token）, Key（被看的 Token）: not 关注, which reads as "follow" (docs/GLOSSARY.md)
    assert "在看的 Token" in ticks and "被看的 Token" in ticks and "关注" not in ticks
    page.click("#lang")
    page.wait_for_function("() => document.documentElement.lang === 'en'")
    # another model keeps the same stop where it has one (here in its encoder)
    page.select_option("#model", "translator")
    page.wait_for_function("() => document.querySelector('#stage').dataset.stage === 'encoder.scale'")
    assert "Encoder-decoder" in page.inner_text("#model-info")
    assert page.is_visible("#target")
    # the decoder's own output can become its input
    before = page.get_attribute("#stage", "data-rendered")
    page.click("#fill-target")
    page.wait_for_function("(b) => document.querySelector('#stage').dataset.rendered !== b", arg=before)
    assert page.input_value("#target") and "target=" in page.url
    assert len(page.locator("#tokens .token-row").nth(1).locator(".chip").all()) > 1
    assert not watched.errors, watched.errors


def test_screenshots_of_three_stages(watched: Any, server: Any, artifacts: Any) -> None:
    page = watched.page
    shots = [
        ("tokens-en.png", {"model": "gpt", "text": ENGLISH, "stage": "tokens", "lang": "en"}),
        ("softmax-zh.png", {"model": "gpt", "text": CHINESE, "stage": "softmax", "layer": 1, "head": 1, "lang": "zh",
                            "cmp": 1}),
        ("cross-attention-en.png", {"model": "translator", "text": "I love you", "target": "wo ai ni",
                                    "stage": "decoder.cross_softmax", "layer": 0, "lang": "en"}),
    ]
    for filename, params in shots:
        open_page(page, server.url, **params)
        assert page.get_attribute("#stage", "data-stage") == params["stage"]
        page.screenshot(path=str(artifacts / filename), full_page=True)
        assert (artifacts / filename).stat().st_size > 10_000
    assert not watched.errors, watched.errors


@pytest.mark.parametrize("text", XSS_TEXTS)
def test_hostile_text_stays_text(watched: Any, server: Any, text: str) -> None:
    page = watched.page
    open_page(page, server.url, model="words", text="the cat", stage="softmax", layer=0)
    run_text(page, text)
    assert page.locator("#message").is_hidden(), page.inner_text("#message")
    words = text.split()
    # chips show the literal words
    chips = page.eval_on_selector_all("#tokens .chip-text", "els => els.map(e => e.textContent)")
    assert chips == [w.replace(" ", "␣") for w in words]
    # labels inside the plots show the literal text, and no markup came alive
    ticks = tick_texts(page)
    for i, word in enumerate(words):
        assert label(i, word) in ticks, (label(i, word), ticks)
    assert page.locator("#panel .plot svg a").count() == 0
    # (the page's own data block, the chapters rendered by the server as application/json, never runs)
    assert page.locator("img[src='x'], script:not([src]):not([type='application/json'])").count() == 0
    # hover text over a cell is literal too
    box = page.locator("#panel .plot .nsewdrag").first.bounding_box()
    page.mouse.move(box["x"] + 5, box["y"] + 5)
    page.wait_for_selector(".hoverlayer .hovertext")
    hover = page.locator(".hoverlayer .hovertext").first.text_content() or ""
    assert label(0, words[0]) in hover and "q·k" in hover
    assert page.locator(".hoverlayer a").count() == 0
    # the next-token chart labels vocabulary words (which contain the same markup) as text
    page.click("button.stage-item[data-stage='logits']")
    wait_idle(page)
    assert page.locator("#panel .plot svg a").count() == 0
    assert not watched.dialogs, watched.dialogs
    assert not watched.errors, watched.errors


def test_works_offline_with_only_its_own_origin(browser: Any, server: Any) -> None:
    with urllib.request.urlopen(server.url + "/") as response:
        csp = response.headers["Content-Security-Policy"]
        assert "charset=utf-8" in response.headers["Content-Type"]
    assert "script-src 'self'" in csp and "unsafe-eval" not in csp and "script-src 'self' 'unsafe-inline'" not in csp
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.set_default_timeout(20000)
    foreign: list[str] = []
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)

    def gate(route: Any) -> None:
        if route.request.url.startswith(server.url):
            route.continue_()
        else:
            foreign.append(route.request.url)
            route.abort()

    context.route("**/*", gate)
    try:
        open_page(page, server.url, model="gpt", text=ENGLISH)
        press_and_wait(page, "ArrowRight")
        assert page.locator("#panel .plot .main-svg").count() >= 1
        assert page.evaluate("() => typeof window.Plotly") == "object"
        assert not foreign, foreign
        assert not errors, errors
    finally:
        context.close()


def test_errors_keep_the_last_view(watched: Any, server: Any) -> None:
    page = watched.page
    open_page(page, server.url, model="gpt", text=ENGLISH, stage="softmax", layer=0)
    good = page.inner_text("#panel .chart-head h3")
    # empty
    run_text(page, "   ")
    assert "Type a sentence first" in page.inner_text("#message")
    assert page.inner_text("#panel .chart-head h3") == good
    # too long for the server (over its character limit)
    run_text(page, "a" * 700)
    assert "too long" in page.inner_text("#message")
    assert page.locator("#panel .plot .main-svg").count() >= 1
    assert page.get_attribute("#stage", "data-stage") == "softmax"
    # busy: the API answers 503 (tests/browser/test_busy.py: the page asks again before it says so)
    page.route("**/api/**", lambda route: route.fulfill(
        status=503, content_type="application/json", headers={"Retry-After": "1"},
        body=json.dumps({"error": {"code": "busy", "message": "busy"}})))
    page.click("#lang")  # a language switch needs no new data ...
    wait_idle(page)
    run_text(page, "a new sentence")  # ... but a new sentence does
    assert "服务器正忙" in page.inner_text("#message")
    assert page.get_attribute("#stage", "data-stage") == "softmax"
    page.unroute("**/api/**")
    # server down
    page.route("**/api/**", lambda route: route.abort())
    run_text(page, "another sentence")
    assert "连接不上服务器" in page.inner_text("#message")
    page.unroute("**/api/**")
    assert page.locator("#panel .plot .main-svg").count() >= 1


def test_presentation_mode_export_and_views(watched: Any, server: Any) -> None:
    page = watched.page
    open_page(page, server.url, model="gpt", text="我 爱 你", stage="scores", layer=0)
    page.keyboard.press("p")
    page.wait_for_function("() => document.body.classList.contains('present')")
    wait_idle(page)
    assert page.locator(".sidebar").is_hidden()
    press_and_wait(page, "PageDown")
    assert page.get_attribute("#stage", "data-stage") == "scale"
    press_and_wait(page, "PageUp")
    assert page.get_attribute("#stage", "data-stage") == "scores"
    assert "present=1" in page.url
    page.keyboard.press("Escape")
    page.wait_for_function("() => !document.body.classList.contains('present')")
    wait_idle(page)
    # data export
    with page.expect_download() as download:
        page.click("#panel .export-csv")
    csv_text = Path(download.value.path()).read_text(encoding="utf-8")
    assert csv_text.splitlines()[0].startswith(",0·<|bos|>,1·我")
    with page.expect_download() as download:
        page.click("#panel .export-json")
    assert json.loads(Path(download.value.path()).read_text(encoding="utf-8"))["z"]
    # all heads, then all layers × heads; clicking a small map opens that head
    page.click("#views button[data-view='heads']")
    wait_idle(page)
    assert page.get_attribute("#stage", "data-view") == "heads"
    page.click("#views button[data-view='layers']")
    wait_idle(page)
    assert page.get_attribute("#stage", "data-view") == "layers"
    assert page.locator("#panel canvas.head-overview").count() == 1  # every layer's heads on one canvas
    assert not watched.errors, watched.errors


SHIPPED = Path(__file__).resolve().parents[2] / "model" / "weights" / "tiny-gpt" / "config.json"


@pytest.mark.skipif(not SHIPPED.is_file(), reason="the trained tiny-gpt is not in model/weights yet")
def test_shipped_tiny_gpt(browser: Any, tmp_path: Path) -> None:
    from tests.browser.models import ServerThread
    from tests.conftest import free_port

    server = ServerThread(free_port(), tmp_path, extra_models=True).start()
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30000)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    try:
        for text in (ENGLISH, CHINESE):
            open_page(page, server.url, model="tiny-gpt", text=text, stage="softmax", layer=0)
            assert page.get_attribute("#stage", "data-stage") == "softmax"
            assert page.locator("#panel .plot .main-svg").count() >= 1
            page.click("button.stage-item[data-stage='logits']")
            wait_idle(page)
            plots = page.locator("#panel .plot")
            assert plots.count() == 2  # probabilities and logits of the top tokens
            for i in range(plots.count()):
                assert plots.nth(i).locator(".main-svg").count() >= 1
        # the training-progress slider: the earliest snapshot's weights, then back to the final ones
        short = "Mr. Knightley said Mr. Knightley"  # few tokens: the cells carry their values as text
        open_page(page, server.url, model="tiny-gpt", text=short, stage="softmax", layer=1)
        assert page.is_visible("#snapshot-row")
        final = page.locator("#panel .plot").first.inner_text()
        move_to_start = "el => { el.value = '0'; el.dispatchEvent(new Event('change')); }"
        page.eval_on_selector("#snapshot", move_to_start)
        wait_idle(page)
        assert "snap=" in page.url and "100" in page.inner_text("#snapshot-label")
        assert page.locator("#panel .plot").first.inner_text() != final  # other weights, other numbers
        assert not errors, errors
    finally:
        context.close()
        server.stop()
