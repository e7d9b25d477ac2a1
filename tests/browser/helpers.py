"""Small helpers shared by the browser tests."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

DIM_WORDS = {"pos": "seq", "q_pos": "query", "k_pos": "key", "head": "heads", "kv_head": "K/V heads",
             "d_vocab": "vocab"}


def open_page(page: Any, base: str, **params: Any) -> None:
    page.goto(f"{base}/?{urlencode(params)}" if params else f"{base}/")
    page.wait_for_selector("body[data-ready='1']")
    wait_idle(page)


def wait_idle(page: Any) -> None:
    page.wait_for_function("() => !document.body.classList.contains('busy')")


def rendered(page: Any) -> str:
    return page.get_attribute("#stage", "data-rendered") or ""


def press_and_wait(page: Any, key: str) -> None:
    before = rendered(page)
    page.keyboard.press(key)
    page.wait_for_function("(b) => document.querySelector('#stage').dataset.rendered !== b", arg=before)
    wait_idle(page)


def run_text(page: Any, text: str) -> None:
    before = rendered(page)
    page.fill("#text", text)
    page.press("#text", "Enter")
    page.wait_for_function(
        "(b) => document.querySelector('#stage').dataset.rendered !== b || !document.querySelector('#message').hidden",
        arg=before,
    )
    wait_idle(page)


def tick_texts(page: Any) -> list[str]:
    return page.eval_on_selector_all(
        "#panel .plot .xtick text, #panel .plot .ytick text", "els => els.map(e => e.textContent)"
    )


def label(index: int, text: str) -> str:
    """The page's token label rule: position·text, spaces shown as ␣, long ones cut at 20 characters."""
    shown = text.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥").replace("\r", "␍") or "∅"
    if len(shown) > 20:
        shown = shown[:19] + "…"
    return f"{index}·{shown}"


def expected_shape(dims: list[str], sizes: dict[str, int]) -> str:
    return "[" + ", ".join(f"{DIM_WORDS.get(d, d)} {sizes[d]}" for d in dims) + "]"


# What is wrong with the labels of the charts under `selector` (test_chart_labels.py for the explorer,
# test_lab_charts.py for the lab): a label outside its chart, an axis title over its tick labels, a
# tick label over the plot area, a margin Plotly had to widen (charts whose margins are sized before
# drawing). With `strict`, also: a tick label over any plot area of a chart of several (subplots), a
# legend over a plot area or a tick label, and a negative tick on an axis whose numbers are all >= 0.
CHART_PROBLEMS = r"""({selector, strict}) => {
  const bad = [];
  const box = (e) => e.getBoundingClientRect();
  const meets = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const shrink = (r, d) => ({ left: r.left + d, right: r.right - d, top: r.top + d, bottom: r.bottom - d });
  const shown = (e) => e.style.display !== 'none' && e.textContent.trim() && box(e).width > 0;
  let charts = 0;
  for (const plot of document.querySelectorAll(selector)) {
    const svg = plot.querySelector('svg.main-svg');
    if (!svg) continue;
    charts += 1;
    const key = plot.dataset.key || plot.closest('[data-key]')?.dataset.key || plot.id;
    const S = box(svg);
    for (const text of plot.querySelectorAll('svg.main-svg text')) {
      if (!shown(text)) continue;
      const r = box(text);
      if (r.left < S.left - 0.5 || r.right > S.right + 0.5 || r.top < S.top - 0.5 || r.bottom > S.bottom + 0.5) {
        bad.push(`${key}: "${text.textContent}" leaves the chart`);
      }
    }
    const areas = [...plot.querySelectorAll('.nsewdrag')].map((a) => shrink(box(a), 1));
    const ticks = [];
    // every axis (x, y; with strict, also the subplots' x2, y2, ...): its tick labels and its title
    const ids = strict ? [...new Set([...plot.querySelectorAll('g[class]')].map((g) => g.getAttribute('class'))
      .filter((c) => /^[xy]\d*tick$/.test(c)).map((c) => c.slice(0, -4)))] : ['x', 'y'];
    for (const letter of ids) {
      const labels = [...plot.querySelectorAll(`.${letter}tick text`)].filter(shown);
      ticks.push(...labels);
      const title = plot.querySelector(`.g-${letter}title text`);
      for (const label of labels) {
        if (title && shown(title) && meets(box(title), box(label))) {
          bad.push(`${key}: ${letter} title over "${label.textContent}"`);
        }
        for (const area of strict ? areas : areas.slice(0, 1)) {
          if (meets(box(label), area)) bad.push(`${key}: "${label.textContent}" over the plot`);
        }
      }
    }
    const L = plot.layout;
    const off = (axis) => axis && axis.automargin === false;
    const automargin = L && Object.keys(L).some((k) => /^[xy]axis\d*$/.test(k) && L[k] && L[k].automargin === true);
    const fitted = L && !automargin && (L.grid || (off(L.xaxis) && off(L.yaxis)));
    if (fitted) {
      const size = plot._fullLayout._size;
      for (const side of ['l', 'r', 't', 'b']) {
        if (Math.abs(size[side] - L.margin[side]) > 1) {
          bad.push(`${key}: margin ${side} widened ${L.margin[side]} -> ${size[side]}`);
        }
      }
    }
    if (!strict) continue;
    const legend = plot.querySelector('g.legend');
    if (legend && box(legend).width > 0) {
      const G = shrink(box(legend), 1);
      if (areas.some((a) => meets(G, a))) bad.push(`${key}: the legend covers the plot`);
      for (const label of ticks) if (meets(G, box(label))) bad.push(`${key}: the legend over "${label.textContent}"`);
      const titles = '[class^="g-x"][class$="title"] text, [class^="g-y"][class$="title"] text';
      for (const title of plot.querySelectorAll(titles)) {
        if (shown(title) && meets(G, box(title))) bad.push(`${key}: the legend over "${title.textContent}"`);
      }
    }
    const full = plot._fullLayout || {};
    for (const trace of plot.data || []) {
      if (trace.type === 'heatmap') continue;
      for (const [letter, values] of [['x', trace.x], ['y', trace.y]]) {
        const name = (trace[`${letter}axis`] || letter).replace(/^([xy])(\d*)$/, (_, l, n) => `${l}axis${n}`);
        const axis = full[name];
        if (!axis || axis.type !== 'linear' || !Array.isArray(values)) continue;
        const numbers = values.filter((v) => typeof v === 'number' && Number.isFinite(v));
        if (!numbers.length || numbers.some((v) => v < 0)) continue;
        const on = (t) => t[`${letter}axis`] || letter;
        const others = (plot.data || []).filter((t) => on(t) === on(trace));
        const negative = others.some((t) => (t[letter] || []).some((v) => typeof v === 'number' && v < 0));
        const below = (axis._vals || []).filter((v) => v.x < 0);
        if (!negative && below.length) bad.push(`${key}: ${name} of numbers >= 0 has a tick at ${below[0].text}`);
      }
    }
  }
  return { charts, bad: [...new Set(bad)] };
}"""
