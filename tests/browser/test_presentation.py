"""A class on a projector (teaching review 3, U1–U4, U8, U11, U13, M11), at 1280×720: the text beside the chart
with E, never squashing it; rows at least 16 px with their labels thinned, never overlapping; chapter text at
the explanation's size; byte tokens named by the character they spell; the all-heads grid with token labels
and pattern titles; hidden cells one grey without numbers in every view; the logit lens's last blocks first."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.helpers import open_page, press_and_wait

pytestmark = pytest.mark.browser

MIN_ROW = 16  # static/js/shared/plot.js MIN_ROW
HIDDEN_GREY = "#b8bec8"  # static/js/shared/plot.js HIDDEN_GREY
LONG = "the cat sat on the mat and then the dog ran to the cat"  # 55 characters: 55 tokens of the gpt test model

# [plot-area height, rows] of the main chart, and the tick labels on one axis that overlap: flat labels by their
# boxes, turned ones (x, −45° or 90°) by the gap between neighbours across their slant (their boxes overlap by design)
PLOT_AREA = """(sel) => { const p = document.querySelector(sel);
  const r = p.querySelector('.nsewdrag').getBoundingClientRect();
  return {top: r.top, height: r.height, right: p.getBoundingClientRect().right, rows: p.data[0].y.length}; }"""
OVERLAPS = r"""(sel) => { const out = [];
  for (const plot of document.querySelectorAll(sel)) for (const axis of ['xtick', 'ytick']) {
    const texts = [...plot.querySelectorAll(`g.${axis} text`)]
      .filter((e) => e.textContent.trim() && e.getBoundingClientRect().width > 0);
    const turn = texts.length && /rotate\((-?[\d.]+)/.exec(texts[0].getAttribute('transform') || '');
    if (turn && Math.abs(Number(turn[1])) > 1) {
      const sin = Math.abs(Math.sin((Number(turn[1]) * Math.PI) / 180));
      const size = parseFloat(getComputedStyle(texts[0]).fontSize);
      const middle = (e) => { const r = e.getBoundingClientRect(); return (r.left + r.right) / 2; };
      const xs = texts.map((e) => [e.textContent, middle(e)]).sort((a, b) => a[1] - b[1]);
      for (let i = 1; i < xs.length; i++) {
        if ((xs[i][1] - xs[i - 1][1]) * sin < size) out.push([xs[i - 1][0], xs[i][0]]);
      }
      continue;
    }
    const boxes = texts.map((e) => [e.textContent, e.getBoundingClientRect()]);
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const [a, b] = [boxes[i][1], boxes[j][1]];
      const overlap = Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1
        && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1;
      if (overlap) out.push([boxes[i][0], boxes[j][0]]);
    } }
  return out; }"""


def projector(page: Any) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})


def test_explanation_stands_beside_the_chart_and_never_squashes_it(server: Any, watched: Any) -> None:
    page = watched.page
    projector(page)
    open_page(page, server.url, chapter="softmax", present=1, lang="zh")  # 我爱北京天安门广场。
    closed = page.evaluate(PLOT_AREA, "#panel .plot[data-key=main]")
    press_and_wait(page, "e")
    assert page.is_visible("#lesson .lesson-body") and page.is_visible("#explain")
    side = page.eval_on_selector("#present-side", "e => e.getBoundingClientRect().left")
    area = page.evaluate(PLOT_AREA, "#panel .plot[data-key=main]")
    assert area["right"] <= side + 1, (area, side)  # beside, not above
    assert area["height"] >= max(MIN_ROW * area["rows"], 0.9 * closed["height"]), (area, closed)
    assert area["top"] + area["height"] <= 720, area  # the whole plot area on the screen
    # the chapter's text reads at the explanation's size (U3), and "try it in the lab" is shown (U3)
    sizes = page.evaluate(
        "() => ['#lesson .lesson-body', '#explain']"
        ".map((s) => parseFloat(getComputedStyle(document.querySelector(s)).fontSize))"
    )
    assert sizes[0] == sizes[1], sizes
    assert page.locator("a.lab-link:visible").count() == 1
    assert page.evaluate(OVERLAPS, "#panel .plot") == []
    press_and_wait(page, "e")  # closed again: the text back above the stage, the chart as wide as the screen
    assert page.is_hidden("#present-side")
    wide = page.evaluate(PLOT_AREA, "#panel .plot[data-key=main]")
    assert wide["right"] > side + 100, wide
    assert not watched.errors, watched.errors


def test_charts_that_shared_a_row_take_the_whole_column_beside_the_text(server: Any, watched: Any) -> None:
    # chapter 2 with E: Q, K and V were three heatmaps side by side in the 62% column, each ~100 px wide
    page = watched.page
    projector(page)
    open_page(page, server.url, chapter="qkv", present=1, lang="en")
    press_and_wait(page, "e")
    side = page.eval_on_selector("#present-side", "e => e.getBoundingClientRect().left")
    widths = page.eval_on_selector_all(
        "#panel .chart-card .plot", "els => els.map((p) => p.querySelector('.nsewdrag').getBoundingClientRect().width)")
    assert len(widths) >= 3 and min(widths) >= 0.45 * side, (widths, side)
    assert page.evaluate(OVERLAPS, "#panel .plot") == []
    assert not watched.errors, watched.errors


@pytest.mark.parametrize("explain", [False, True])
def test_a_long_sentence_keeps_its_rows_and_thins_its_labels(server: Any, watched: Any, explain: bool) -> None:
    page = watched.page
    projector(page)
    open_page(page, server.url, model="gpt", text=LONG, stage="softmax", layer=0, present=1, lang="en")
    if explain:
        press_and_wait(page, "e")
    area = page.evaluate(PLOT_AREA, "#panel .plot[data-key=main]")
    assert area["rows"] >= 50 and area["height"] / area["rows"] >= MIN_ROW - 0.1, area
    assert page.evaluate(OVERLAPS, "#panel .plot") == []
    shown = page.eval_on_selector_all("#panel .plot[data-key=main] g.ytick text", "els => els.length")
    assert 5 <= shown < area["rows"], shown  # every k-th row named
    assert not watched.errors, watched.errors


def test_byte_tokens_are_named_by_their_character(server: Any, watched: Any) -> None:
    page = watched.page
    # € = E2 82 AC, not in the gpt test model's vocabulary
    open_page(page, server.url, model="gpt", text="a€a", stage="softmax", layer=0, lang="en")
    chips = page.eval_on_selector_all("#tokens .chip-text", "els => els.map(e => e.textContent)")
    assert [c for c in chips if "€" in c] == ["€ 1/3", "€ 2/3", "€ 3/3"], chips
    assert not any("<0x" in c for c in chips), chips
    titles = page.eval_on_selector_all("#tokens .byte-chip", "els => els.map(e => e.title)")
    assert [t.split(" · ")[-1] for t in titles] == ["<0xE2>", "<0x82>", "<0xAC>"], titles  # the raw bytes stay in reach
    ticks = page.eval_on_selector_all("#panel .plot[data-key=main] g.ytick text", "els => els.map(e => e.textContent)")
    assert sum(t.endswith(("€ 1/3", "€ 2/3", "€ 3/3")) for t in ticks) == 3, ticks
    # a candidate next token stands alone: the character its bytes spell, or the ones it can still become
    # (SmolLM2 on 我爱北京 predicts <0xEF><0xBC>, the start of full-width punctuation), the same code as the chips
    lone = page.evaluate("""async () => { const dom = await import('/static/js/shared/dom.js');
      return [dom.loneByteText('<0xE6><0x88><0x91>'), dom.loneByteText('<0xE4><0xBD>'), dom.loneByteText('<0x91>'),
              dom.tokenTexts([{ text: '<0xE6>' }, { text: 'a' }])]; }""")
    assert lone == ["我", "佀…使 1–2/3", None, ["怀…濿 1/3", "a"]], lone
    assert not watched.errors, watched.errors


# every heatmap of a chart: its grey "hidden" traces (colour, text) and whether a value trace prints or colours a
# hidden cell
HIDDEN = """(sel) => [...document.querySelectorAll(sel)].map((plot) => {
  const traces = plot.data.filter((t) => t.type === 'heatmap');
  const greys = traces.filter((t) => t.name === 'hidden');
  const values = traces.filter((t) => t.name !== 'hidden');
  const shown = greys.some((g) => values.some((v) => (v.xaxis || 'x') === (g.xaxis || 'x') &&
    g.z.some((row, i) => row.some((c, j) => c !== null && v.z[i][j] !== null))));
  return {key: plot.dataset.key, greys: greys.length,
          colours: [...new Set(greys.flatMap((g) => g.colorscale.map((c) => c[1])))],
          text: greys.some((g) => g.texttemplate || g.text), shown}; })"""


@pytest.mark.parametrize("where", ["head", "heads", "no_scale"])
def test_hidden_cells_look_the_same_in_every_view(server: Any, watched: Any, where: str) -> None:
    page = watched.page
    params: dict[str, Any] = {"model": "gpt", "text": "the cat sat.", "stage": "softmax", "layer": 0, "present": 1}
    if where == "heads":
        params["view"] = "heads"
    if where == "no_scale":
        params["iv"] = "no_scale"  # the two runs side by side (chapter 4)
    open_page(page, server.url, **params)
    charts = page.evaluate(
        HIDDEN,
        "#panel .plot[data-key=main], #panel .plot[data-key=grid], #panel .plot[data-key=iv-before], "
        "#panel .plot[data-key=iv-after]",
    )
    charts = [c for c in charts if c["key"] != "main" or where == "head"]
    assert charts and all(c["greys"] >= 1 for c in charts), charts
    assert all(c["colours"] == [HIDDEN_GREY] and not c["text"] and not c["shown"] for c in charts), charts
    assert not watched.errors, watched.errors


def test_all_heads_grid_names_its_tokens_and_patterns(server: Any, watched: Any) -> None:
    page = watched.page
    projector(page)
    text = "the cat sat. the cat sat."
    open_page(page, server.url, model="gpt", text=text, stage="softmax", layer=1, view="heads", present=1)
    # the head menu shows in presentation mode, and names the measured heads as the grid's titles do (M11, U8)
    assert page.is_visible("#head")
    options = page.eval_on_selector_all("#head option[data-probe]", "els => els.map(e => e.textContent)")
    titles = page.evaluate(
        "() => document.querySelector('#panel .plot[data-key=grid]').layout.annotations.map((a) => a.text)"
    )
    assert options, options
    for option in options:
        head, pattern = option.split(" · ")[:2]
        named = [t for t in titles if t.startswith(f"Head {head} · ")]
        # a small map's title: the pattern (cut short with … where it must be) and its measured score
        label = re.sub(r" [0-9.]+$", "", named[0].split(" · ")[1]) if named else ""
        assert named and pattern.startswith(label.rstrip("…")), (option, titles)
    ticks = page.eval_on_selector_all("#panel .plot[data-key=grid] g.ytick text", "els => els.map(e => e.textContent)")
    assert any(t.startswith("0·") for t in ticks), ticks  # token labels on the small maps
    assert page.evaluate(OVERLAPS, "#panel .plot[data-key=grid]") == []
    assert not watched.errors, watched.errors


def test_logit_lens_shows_the_last_blocks_first(server: Any, watched: Any) -> None:
    page = watched.page
    page.goto(f"{server.url}/lab?panel=logit_lens&model=gpt")
    rows = page.evaluate(
        """async () => { const m = await import('/static/js/lab/panels/logit_lens.js');
        const deep = ['embed', ...Array.from({length: 30}, (_, i) => i)];
        return [m.shownRows(deep, false).map((i) => deep[i]), m.shownRows(deep, true).length,
                m.shownRows(deep.slice(0, 5), false).length]; }"""
    )
    assert rows[0] == list(range(18, 30)) and rows[1] == 31 and rows[2] == 5, rows
