"""The lab's two side-by-side panels in a real browser: interventions (the original run beside the changed one,
drawn by the explorer's view) and compare (the model beside a variant, on any stage both record)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.lab_page import (
    RENDERED_AGAIN,
    TOGGLES,
    api_post,
    chart_state,
    idle,
    lab_texts,
    open_lab,
    shared_texts,
)


@pytest.mark.browser
def test_every_intervention_toggle_changes_the_chart(watched: Any, server: Any) -> None:
    page = watched.page
    open_lab(page, server.url, model="gpt", text="the cat sat on a mat", lang="en", ivl="1", abl="0")  # older keys
    original = chart_state(page)
    for name in TOGGLES:
        box = page.locator(f"#controls-interventions input[data-item='{name}']")
        before = page.get_attribute("#panel-interventions", "data-rendered")
        box.check()
        page.wait_for_function(RENDERED_AGAIN, arg=before)
        idle(page)
        assert f"interventions.toggles={name}" in page.url
        assert chart_state(page) != original, f"{name} changed nothing"
        loss = page.locator("#panel-interventions .iv-loss")
        assert float(loss.get_attribute("data-before")) > 0 and float(loss.get_attribute("data-after")) > 0
        before = page.get_attribute("#panel-interventions", "data-rendered")
        page.locator(f"#controls-interventions input[data-item='{name}']").uncheck()
        page.wait_for_function(RENDERED_AGAIN, arg=before)
        idle(page)
        assert chart_state(page) == original, f"{name} off did not restore the original"
    assert watched.errors == []


@pytest.mark.browser
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_interventions_panel_is_the_explorers_view(watched: Any, server: Any, lang: str) -> None:
    # shared/interventions_view.js on both pages: both runs' charts with how they differ, each token's bars, each
    # run's table and the loss, in the explorer's words (static/text/shared.<lang>.json)
    page = watched.page
    open_lab(page, server.url, model="gpt", text="the cat sat", lang=lang, panel="interventions",
             **{"interventions.toggles": "no_mask,window", "interventions.layer": "0", "interventions.head": "1"})
    board = page.locator("#board-interventions")
    keys = board.locator(".chart-card").evaluate_all("els => els.map(e => e.dataset.key)")
    assert keys == ["iv-before", "iv-after", "iv-next"]
    texts = shared_texts(lang) | lab_texts(lang)
    what = texts["interventions_what_no_mask"] + texts["interventions_list_sep"] + \
        texts["interventions_what_window"].replace("{w}", "2")
    assert board.locator("[data-key='iv-after'] h3").inner_text().startswith(what)
    note = board.locator("[data-key='iv-after'] .chart-note").inner_text()
    assert note.startswith(texts["interventions_diff"].split("{")[0]), note
    tables = board.locator(".iv-next-table")
    assert tables.count() == 2 and tables.nth(0).locator("tbody tr").count() == 8
    # the bars: each token of either table, its probability in both runs as the API gives it (its top 20)
    base = {"model": "gpt", "text": "the cat sat", "stages": ["hook_tokens"], "top_k": 20}
    runs = [api_post(page, "/api/trace", base),
            api_post(page, "/api/trace", {**base, "interventions": {"no_mask": True, "window": 2}})]
    bars = page.evaluate("() => document.querySelector(`#board-interventions [data-key='iv-next'] .plot`)"
                         ".data.map(t => t.y)")
    ids = list(dict.fromkeys(r["id"] for run in runs for r in run["top_tokens"][:8]))
    for run, shown in zip(runs, bars, strict=True):
        probs = {r["id"]: r["prob"] for r in run["top_tokens"]}
        wanted = [probs.get(i) for i in ids]
        assert [v is None for v in shown] == [v is None for v in wanted], (shown, wanted)
        assert [v for v in shown if v is not None] == pytest.approx([v for v in wanted if v is not None], rel=1e-6)
    loss = board.locator(".iv-loss")
    assert float(loss.get_attribute("data-before")) == pytest.approx(runs[0]["loss"])
    assert float(loss.get_attribute("data-after")) == pytest.approx(runs[1]["loss"])
    assert watched.errors == []


@pytest.mark.browser
def test_the_interventions_panel_on_an_encoder_says_there_is_no_next_token(watched: Any, server: Any) -> None:
    page = watched.page
    open_lab(page, server.url, model="bert", text="the cat sat", lang="en", panel="interventions",
             **{"interventions.toggles": "no_scale"})
    board = page.locator("#board-interventions")
    assert board.locator("[data-key='iv-next']").count() == 0 and board.locator(".iv-next-table").count() == 0
    assert "no next-token head" in board.locator(".iv-none").inner_text()
    assert board.locator(".iv-loss").get_attribute("data-before") == ""
    assert watched.errors == []


def compare_charts(page: Any) -> list[str]:
    """What each side of the compare panel draws (its traces' numbers), left then right."""
    return page.evaluate("""() => [...document.querySelectorAll('#board-compare .plot')]
        .map(el => JSON.stringify((el.data || []).map(t => [t.type, t.z, t.y])))""")


def choose_compare_stage(page: Any, stage: str) -> None:
    before = page.get_attribute("#panel-compare", "data-rendered")
    page.select_option("#controls-compare select[data-field='stage']", stage)
    page.wait_for_function("(b) => document.querySelector('#panel-compare').dataset.rendered !== b", arg=before)
    idle(page)


@pytest.mark.browser
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_compare_matches_any_stage_and_keeps_it_in_the_url(watched: Any, server: Any, lang: str) -> None:
    page = watched.page
    open_lab(page, server.url, model="gpt", text="the cat sat", lang=lang, vs="set", set="activation", val="gelu",
             panel="compare")  # the older keys of compare.variant, .setting and .value
    options = "#controls-compare select[data-field='stage'] option"
    stages = page.eval_on_selector_all(options, "os => os.map(o => o.value)")
    assert {"blocks.0.hook_resid_post", "blocks.1.ln1.hook_scale", "blocks.0.attn.hook_pattern"} <= set(stages)
    # the learner reads what each stage holds and what each axis counts, never a hook name or a config key
    words = page.eval_on_selector_all("#controls-compare select option", "os => os.map(o => o.textContent)")
    words += page.eval_on_selector_all("#board-compare g.g-xtitle text, #board-compare g.g-ytitle text, "
                                       "#board-compare h3", "es => es.map(e => e.textContent)")
    raw = [w for w in words if re.search(r"hook_|blocks\.|(?<!√)\b[a-z]+_[a-z]+|\b(?:gelu|swiglu|relu)\b", w)]
    assert not raw, raw
    first = compare_charts(page)
    choose_compare_stage(page, "blocks.0.hook_resid_post")  # 2-D: pos × d_model, a heatmap on each side
    second = compare_charts(page)
    assert len(second) == 2 and all(a != b for a, b in zip(first, second, strict=True)), "both sides change"
    assert all('"heatmap"' in chart for chart in second)
    scales = page.evaluate(
        "[...document.querySelectorAll('#board-compare .plot')].map(el => [el.data[0].zmin, el.data[0].zmax])"
    )
    assert scales[0] == scales[1], "same shape, same colour scale"
    choose_compare_stage(page, "blocks.1.ln1.hook_scale")  # 1-D: pos, a bar on each side
    third = compare_charts(page)
    assert all('"bar"' in chart for chart in third) and all(a != b for a, b in zip(second, third, strict=True))
    assert "compare.stage=blocks.1.ln1.hook_scale" in page.url
    shown = page.inner_text("#panel-compare")
    assert not re.search(r"⟦|undefined|NaN|\{\w+\}", shown), shown[:400]
    url = page.url
    page.goto(url)  # the link alone brings the same stage and the same numbers back
    page.wait_for_selector("body[data-ready='1']")
    idle(page)
    assert page.input_value("#controls-compare select[data-field='stage']") == "blocks.1.ln1.hook_scale"
    assert compare_charts(page) == third
    assert watched.errors == []


@pytest.mark.browser
def test_compare_says_what_differs_when_shapes_differ(watched: Any, server: Any) -> None:
    page = watched.page
    open_lab(
        page,
        server.url,
        model="gpt",
        text="the cat sat",
        lang="en",
        vs="set",
        set="d_head",
        val="64",
        cst="blocks.1.attn.hook_z",
        cmh="1",
        panel="compare",
    )
    note = page.inner_text("#panel-compare .cmp-shape")
    assert re.search(r"head dimension: (\d+) ≠ (?!\1\b)\d+", note), note  # the dimension in words, not d_head
    assert page.input_value("#controls-compare select[data-field='head']") == "1"
    assert page.locator("#board-compare .plot").count() == 2
    assert watched.errors == []


@pytest.mark.browser
def test_compare_offers_the_servers_positional_kinds(watched: Any, server: Any) -> None:
    page = watched.page
    open_lab(page, server.url, model="gpt", text="the cat sat", lang="en", vs="set", set="pos_encoding", val="alibi",
             panel="compare")
    offered = page.eval_on_selector_all("#controls-compare select[data-field='value'] option",
                                        "os => os.map(o => o.value)")
    kinds = page.evaluate("async () => (await (await fetch('/api/positional-encoding/kinds')).json()).map(k => k.name)")
    assert offered == kinds and "alibi" in kinds
    assert page.input_value("#controls-compare select[data-field='value']") == "alibi"
    drawn = page.eval_on_selector_all("#board-compare .plot", "els => els.map(e => !!e.querySelector('.main-svg'))")
    assert drawn == [True, True]
    assert watched.errors == []


