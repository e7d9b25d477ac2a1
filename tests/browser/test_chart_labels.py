"""Charts whose margins are sized before drawing (plot.js fitMargins, instead of Plotly's automargin,
which draws every chart twice): every label stays inside its chart, axis titles clear of the tick
labels, tick labels off the plot area, and Plotly never had to widen a margin (no second draw),
in English, with Chinese tokens, with markup-looking tokens and in presentation mode."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.helpers import CHART_PROBLEMS, open_page
from tests.browser.models import XSS_TEXTS

pytestmark = pytest.mark.browser

ENGLISH = "The animal didn't cross the street because it was too tired"
CHINESE = "我爱北京天安门广场。"

GPT_STAGES = ["tokens", "pos", "ln1", "rope", "qkv", "softmax", "z", "ffn_act"]


def check(page: Any, server: Any, **params: Any) -> None:
    open_page(page, server.url, **params)
    found = page.evaluate(CHART_PROBLEMS, {"selector": "#panel .plot", "strict": False})
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
