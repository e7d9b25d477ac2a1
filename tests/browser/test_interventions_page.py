"""The explorer's interventions (a toggle beside the stage each changes, both runs side by side, the loss
before → after from the API, URL state) and the live architectures view (?sheet=arch)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from tests.browser.helpers import CHART_PROBLEMS, open_page, wait_idle

pytestmark = pytest.mark.browser

TEXT = "the cat sat"

# (toggle, stage of the decoder `gpt`, layer, head): each toggle beside a stage it changes
TOGGLES = [
    ("no_scale", "scale", 0, 1),
    ("no_scale", "softmax", 1, 0),
    ("no_mask", "mask", 0, 2),
    ("window", "mask", 1, 1),
    ("temperature", "softmax", 0, 3),
    ("ablate", "z", 1, 2),
    ("ablate", "attn_out", 0, 0),
    ("shuffle", "tokens", 0, 1),
    ("shuffle", "pos", 0, 0),
]

ALL_PLOTS = """() => [...document.querySelectorAll('#panel .plot')].map(
    el => ({key: el.dataset.key, z: (el.data || []).map(d => d.z ?? d.y ?? null)}))"""
PLOT_Z = """k => { const el = document.querySelector(`#panel [data-key='${k}'] .plot`);
    return el && el.data ? el.data[0].z : null }"""


def url_params(page: Any) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def after_change(page: Any, action: Any) -> None:
    before = page.get_attribute("#stage", "data-rendered")
    action()
    page.wait_for_function("(b) => document.querySelector('#stage').dataset.rendered !== b", arg=before)
    wait_idle(page)


def api_trace(page: Any, body: dict[str, Any]) -> dict[str, Any]:
    return page.evaluate(
        """async (body) => (await fetch('/api/trace', {method: 'POST', headers: {'Content-Type': 'application/json'},
            body: JSON.stringify(body)})).json()""",
        body,
    )


@pytest.mark.parametrize(("kind", "stage", "layer", "head"), TOGGLES, ids=[f"{k}@{s}" for k, s, _, _ in TOGGLES])
def test_toggle_changes_the_chart_and_off_restores_it(
    watched: Any, server: Any, kind: str, stage: str, layer: int, head: int
) -> None:
    page = watched.page
    open_page(page, server.url, model="gpt", text=TEXT, stage=stage, layer=layer, head=head, lang="en")
    original = page.evaluate(ALL_PLOTS)
    assert original and all(p["z"] for p in original)
    toggles = page.eval_on_selector_all(".iv-toggle", "els => els.map(e => e.dataset.iv)")
    assert kind in toggles
    assert page.locator("[data-key='iv-after']").count() == 0

    after_change(page, lambda: page.check(f".iv-toggle[data-iv='{kind}']"))
    assert url_params(page)["iv"] == kind
    before_z = page.evaluate(PLOT_Z, "iv-before")
    after_z = page.evaluate(PLOT_Z, "iv-after")
    assert before_z and after_z
    assert json.dumps(before_z) != json.dumps(after_z), f"{kind} did not change the chart at {stage}"
    # the original run's chart is the stage's own numbers (same request, no intervention)
    own = [p for p in page.evaluate(ALL_PLOTS) if not p["key"].startswith("iv-")]
    assert own == original
    # the explanation of the toggle is on screen, in words (no missing text)
    explain = page.inner_text(".iv-explain")
    assert len(explain) > 60 and "⟦" not in explain

    after_change(page, lambda: page.uncheck(f".iv-toggle[data-iv='{kind}']"))
    assert "iv" not in url_params(page)
    assert page.locator("[data-key='iv-after']").count() == 0
    assert page.evaluate(ALL_PLOTS) == original
    assert not watched.errors, watched.errors


def test_loss_line_is_the_api_loss(watched: Any, server: Any) -> None:
    page = watched.page
    open_page(page, server.url, model="gpt", text=TEXT, stage="mask", layer=0, head=0, lang="en", iv="no_mask")
    loss = page.locator(".iv-loss")
    before, after = float(loss.get_attribute("data-before")), float(loss.get_attribute("data-after"))
    base = {"model": "gpt", "text": TEXT, "stages": ["hook_tokens"], "top_k": 8}
    clean = api_trace(page, base)
    changed = api_trace(page, {**base, "interventions": {"no_mask": True}})
    assert before == pytest.approx(clean["loss"]) and after == pytest.approx(changed["loss"])
    assert before != after
    change = after - before
    sign = "+" if change > 0 else "−"
    assert f"{before:.3f} → {after:.3f} ({sign}{abs(change):.3f})" in loss.inner_text()
    # the next-token tables are the API's top tokens, original and changed
    tables = page.locator(".iv-next-table")
    assert tables.count() == 2
    first = [
        cells[1]
        for cells in tables.nth(1).evaluate(
            "t => [...t.querySelectorAll('tbody tr')].map(r => [...r.cells].map(c => c.textContent))"
        )
    ]
    assert len(first) == len(changed["top_tokens"]) == 8
    prob = tables.nth(1).locator("tbody tr").first.locator("td").nth(2).inner_text()
    assert prob == f"{100 * changed['top_tokens'][0]['prob']:.1f}%"
    # the bars beside them: each token of either table, its probability in both runs (the API's top 20; none
    # where a run does not rank it there)
    asked = {**base, "top_k": 20}
    runs = [api_trace(page, asked), api_trace(page, {**asked, "interventions": {"no_mask": True}})]
    bars = page.evaluate("() => document.querySelector(\"#panel [data-key='iv-next'] .plot\").data.map(t => t.y)")
    ids = list(dict.fromkeys(r["id"] for run in runs for r in run["top_tokens"][:8]))
    for run, shown in zip(runs, bars, strict=True):
        probs = {r["id"]: r["prob"] for r in run["top_tokens"]}
        wanted = [probs.get(i) for i in ids]
        assert [v is None for v in shown] == [v is None for v in wanted], (shown, wanted)
        assert [v for v in shown if v is not None] == pytest.approx([v for v in wanted if v is not None], rel=1e-6)
    assert not watched.errors, watched.errors


def test_url_round_trips_an_intervention(watched: Any, server: Any) -> None:
    page = watched.page
    open_page(
        page,
        server.url,
        model="gpt",
        text=TEXT,
        stage="softmax",
        layer=1,
        head=2,
        lang="zh",
        iv="temperature",
        ivt="0.5",
    )
    assert page.is_checked(".iv-toggle[data-iv='temperature']")
    assert page.input_value(".iv-temp") == "0.5"
    shown = page.evaluate(PLOT_Z, "iv-after")
    # another T is another run
    after_change(page, lambda: page.select_option(".iv-temp", "4"))
    assert url_params(page)["ivt"] == "4"
    assert json.dumps(page.evaluate(PLOT_Z, "iv-after")) != json.dumps(shown)
    # the window's W is in the URL too, and a copied link reopens the same view
    open_page(page, server.url, model="gpt", text=TEXT, stage="mask", layer=0, head=0, lang="en")
    after_change(page, lambda: page.check(".iv-toggle[data-iv='window']"))
    after_change(page, lambda: page.select_option(".iv-window", "1"))
    link = page.url
    assert url_params(page)["iv"] == "window" and url_params(page)["ivw"] == "1"
    z = page.evaluate(PLOT_Z, "iv-after")
    # W = 1: each query sees only itself
    assert all((v is None) == (i != j) for i, row in enumerate(z) for j, v in enumerate(row))
    page.goto(link)
    page.wait_for_selector("body[data-ready='1']")
    wait_idle(page)
    assert page.evaluate(PLOT_Z, "iv-after") == z
    # stepping to a stage without the toggle turns it off
    after_change(page, lambda: page.click("#next"))
    assert "iv" not in url_params(page)
    assert not watched.errors, watched.errors


def test_old_compare_link_opens_no_scale(watched: Any, server: Any) -> None:
    page = watched.page
    open_page(page, server.url, model="gpt", text=TEXT, stage="softmax", layer=0, head=0, lang="en", cmp=1)
    assert page.is_checked(".iv-toggle[data-iv='no_scale']")
    assert url_params(page)["iv"] == "no_scale"
    assert not watched.errors, watched.errors


def test_no_mask_on_an_encoder_says_it_changes_nothing(watched: Any, server: Any) -> None:
    page = watched.page
    open_page(page, server.url, model="bert", text=TEXT, stage="mask", layer=0, head=1, lang="en", iv="no_mask")
    assert page.evaluate(PLOT_Z, "iv-before") == page.evaluate(PLOT_Z, "iv-after")
    assert "no mask to remove" in page.inner_text(".iv-explain")
    assert "same numbers" in page.inner_text("[data-key='iv-after'] .chart-note")
    assert page.get_attribute(".iv-loss", "data-before") == ""
    assert "No loss" in page.inner_text(".iv-loss")
    assert not watched.errors, watched.errors


def test_cross_attention_says_why_it_has_no_toggle(watched: Any, server: Any) -> None:
    page = watched.page
    open_page(
        page,
        server.url,
        model="translator",
        text="I love you",
        target="wo ai ni",
        stage="decoder.cross_softmax",
        layer=0,
        lang="zh",
    )
    assert page.locator(".iv-toggle").count() == 0
    assert "交叉注意力" in page.inner_text(".iv-card")
    assert not watched.errors, watched.errors


ARCH_PLOTS = """() => [...document.querySelectorAll('#sheet .arch-col')].map(col => ({
    arch: col.dataset.arch, model: col.dataset.model,
    plots: [...col.querySelectorAll('.plot')].map(
        el => (el.data && el.data[0] && el.data[0].z) ? el.data[0].z.length : 0),
    text: col.innerText}))"""


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_architectures_view_runs_three_models(watched: Any, server: Any, lang: str) -> None:
    page = watched.page
    open_page(page, server.url, model="gpt", text=TEXT, stage="mask", lang=lang, sheet="arch")
    cols = page.evaluate(ARCH_PLOTS)
    assert [c["arch"] for c in cols] == ["encoder", "decoder", "encoder-decoder"]
    assert [c["model"] for c in cols] == ["bert", "gpt", "translator"]
    count = """async (m) => (await (await fetch('/api/tokenize', {method: 'POST',
        headers: {'Content-Type': 'application/json'}, body: JSON.stringify({model: m, text: 'the cat sat'})})).json())
        .tokens.length"""
    tokens = {c["model"]: page.evaluate(count, c["model"]) for c in cols[:2]}
    # the encoder's and the decoder's patterns have one row per token of this sentence
    assert cols[0]["plots"] == [tokens["bert"]] and cols[1]["plots"] == [tokens["gpt"]]
    # the translator: decoder self-attention and cross-attention over the source
    assert len(cols[2]["plots"]) == 2 and all(cols[2]["plots"])
    # the decoder's mask hides the future (grey layer), the encoder's hides nothing
    grey = page.evaluate("() => [...document.querySelectorAll('#sheet .arch-col .plot')].map(el => el.data.length)")
    assert grey[0] == 1 and grey[1] == 2
    for c in cols:
        assert "⟦" not in c["text"]
    assert not watched.errors, watched.errors
    # the sheet opens from the page's Architectures button too, and closes
    page.click(".sheet-close")
    wait_idle(page)
    assert page.locator("#sheet .arch-col").count() == 0


def test_architectures_view_without_an_encoder(watched: Any, server: Any) -> None:
    page = watched.page

    def no_encoder(route: Any) -> None:
        response = route.fetch()
        models = [m for m in response.json() if m["architecture"] != "encoder"]
        route.fulfill(response=response, json=models)

    page.route("**/api/models", no_encoder)
    open_page(page, server.url, model="gpt", text=TEXT, stage="mask", lang="en", sheet="arch")
    cols = page.evaluate(ARCH_PLOTS)
    assert cols[0]["arch"] == "encoder" and cols[0]["plots"] == []
    assert "No encoder-only model is loaded" in cols[0]["text"]
    assert all(cols[1]["plots"]) and len(cols[2]["plots"]) == 2
    assert not watched.errors, watched.errors


CELL_TEXT = """k => { const t = document.querySelector(
    `#panel [data-key='${k}'] .plot g.hm text, #panel [data-key='${k}'] .plot .textpoint text`);
    return t ? parseFloat(getComputedStyle(t).fontSize) : null }"""
NOTE = "k => document.querySelector(`#panel .chart-card[data-key='${k}'] .chart-note`).textContent"


@pytest.mark.parametrize(("text", "width", "fits"), [("the cat", 1280, True), ("the cat sat", 1280, True),
                                                    ("the cat sat", 1000, False)])
def test_side_by_side_cell_numbers_read_from_the_back_of_a_room(
    watched: Any, server: Any, text: str, width: int, fits: bool
) -> None:
    """Presentation mode: both runs' cell numbers at the single heatmap's 15 px, or none and a note saying why."""
    page = watched.page
    page.set_viewport_size({"width": width, "height": 720})
    open_page(page, server.url, model="gpt", text=text, stage="softmax", layer=0, head=0, lang="en", iv="no_scale",
              present=1)
    page.wait_for_selector("#panel [data-key='iv-after'] .plot .main-svg")
    n = len(page.evaluate(PLOT_Z, "iv-before"))
    assert 6 < n <= 12, n  # small enough for cell numbers, more than 6 rows: 15 px
    assert page.evaluate(CELL_TEXT, "main") == 15  # the stage's own heatmap, full width
    for key in ("iv-before", "iv-after"):
        size, note = page.evaluate(CELL_TEXT, key), page.evaluate(NOTE, key)
        if fits:
            assert size == 15, (key, size)
            assert "too small" not in note
        else:
            assert size is None, (key, size)
            assert "too small here for their numbers" in note, note
    found = page.evaluate(CHART_PROBLEMS, {"selector": "#panel .chart-card[data-key^='iv-'] .plot", "strict": True})
    assert found["charts"] == 3 and not found["bad"], found  # both runs and the bars: no label cut off
    assert not watched.errors, watched.errors
