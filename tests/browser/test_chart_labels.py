"""Charts whose margins are sized before drawing (plot.js fitMargins, instead of Plotly's automargin,
which draws every chart twice): every label stays inside its chart, axis titles clear of the tick
labels, tick labels off the plot area, and Plotly never had to widen a margin (no second draw),
in English, with Chinese tokens, with markup-looking tokens and in presentation mode."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.helpers import open_page
from tests.browser.models import XSS_TEXTS

pytestmark = pytest.mark.browser

ENGLISH = "The animal didn't cross the street because it was too tired"
CHINESE = "我爱北京天安门广场。"

LABELS = """() => {
  const bad = [];
  const box = (e) => e.getBoundingClientRect();
  const meets = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const shown = (e) => e.style.display !== 'none' && e.textContent.trim() && box(e).width > 0;
  let charts = 0;
  for (const plot of document.querySelectorAll('#panel .plot')) {
    const svg = plot.querySelector('svg.main-svg');
    if (!svg) continue;
    charts += 1;
    const key = plot.dataset.key;
    const S = box(svg);
    for (const text of plot.querySelectorAll('svg.main-svg text')) {
      if (!shown(text)) continue;
      const r = box(text);
      if (r.left < S.left - 0.5 || r.right > S.right + 0.5 || r.top < S.top - 0.5 || r.bottom > S.bottom + 0.5) {
        bad.push(`${key}: "${text.textContent}" leaves the chart`);
      }
    }
    const area = plot.querySelector('.nsewdrag');
    for (const letter of ['x', 'y']) {
      const labels = [...plot.querySelectorAll(`.${letter}tick text`)].filter(shown);
      const title = plot.querySelector(`.g-${letter}title text`);
      for (const label of labels) {
        if (title && shown(title) && meets(box(title), box(label))) {
          bad.push(`${key}: ${letter} title over "${label.textContent}"`);
        }
        if (area) {
          const A = box(area);
          const inner = { left: A.left + 1, right: A.right - 1, top: A.top + 1, bottom: A.bottom - 1 };
          if (meets(box(label), inner)) bad.push(`${key}: "${label.textContent}" over the plot`);
        }
      }
    }
    const L = plot.layout;
    const off = (axis) => axis && axis.automargin === false;
    const fitted = L && (L.grid || (off(L.xaxis) && off(L.yaxis)));
    if (fitted) {
      const size = plot._fullLayout._size;
      for (const side of ['l', 'r', 't', 'b']) {
        if (Math.abs(size[side] - L.margin[side]) > 1) {
          bad.push(`${key}: margin ${side} widened ${L.margin[side]} -> ${size[side]}`);
        }
      }
    }
  }
  return { charts, bad };
}"""

GPT_STAGES = ["tokens", "pos", "ln1", "rope", "qkv", "softmax", "z", "ffn_act"]


def check(page: Any, server: Any, **params: Any) -> None:
    open_page(page, server.url, **params)
    found = page.evaluate(LABELS)
    assert found["charts"] > 0, params
    assert not found["bad"], (params, found["bad"])


@pytest.mark.parametrize("lang, text", [("en", ENGLISH), ("zh", CHINESE)])
def test_rope_model_stages_keep_their_labels(watched: Any, server: Any, lang: str, text: str) -> None:
    for stage in GPT_STAGES:
        check(watched.page, server, model="gpt", text=text, stage=stage, lang=lang)
    for stage in ("qkv", "softmax"):  # 4 heads: the big grid, token labels on its maps
        check(watched.page, server, model="gpt", text=text, stage=stage, view="heads", lang=lang)
    assert not watched.errors, watched.errors


def test_alibi_and_learned_positions_with_markup_tokens(watched: Any, server: Any) -> None:
    for text in XSS_TEXTS[:2]:  # whole-word tokens: "<img", "href=..." reach the labels as text
        for stage in ("tokens", "pos", "softmax"):
            check(watched.page, server, model="words", text=text, stage=stage, lang="en")
    check(watched.page, server, model="bert", text=ENGLISH, stage="pos", lang="zh")
    assert not watched.errors, watched.errors


def test_presentation_mode_keeps_the_labels(watched: Any, server: Any) -> None:
    for stage in ("pos", "rope", "softmax"):
        check(watched.page, server, model="gpt", text=CHINESE, stage=stage, lang="zh", present="1")
    assert not watched.errors, watched.errors
