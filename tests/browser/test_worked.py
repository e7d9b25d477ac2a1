"""The explanations are read from the chart on screen: the worked example's numbers are the model's
own (its weighted sum equals the model's z), the head note counts the chart's rows, and the stages a
/lab panel explains link to it."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.helpers import open_page

pytestmark = pytest.mark.browser


def cells(page: Any, caption_part: str) -> list[list[str]]:
    return page.evaluate(
        """(part) => {
          const tables = [...document.querySelectorAll('.worked-table')];
          const table = tables.find((t) => t.caption.textContent.includes(part));
          return [...table.tBodies[0].rows].map((r) => [...r.cells].map((c) => c.textContent));
        }""",
        caption_part,
    )


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_worked_example_is_the_models_arithmetic(server: Any, watched: Any, lang: str) -> None:
    page = watched.page
    open_page(page, server.url, text="ab", stage="softmax", layer=0, head=0, lang=lang)
    assert page.locator(".worked-card").count() == 1
    weights = cells(page, "softmax")
    for row in weights:  # each row of weights sums to 1 (masked cells are 0)
        assert abs(sum(float(x) for x in row[1:]) - 1) < 0.01
    raw, scaled = cells(page, "Q·K"), cells(page, "√d_k =")
    sqrt_d = float(re.search(r"√d_k = ([0-9.]+)", page.inner_text(".worked-grid")).group(1))
    assert abs(float(raw[-1][1]) / sqrt_d - float(scaled[-1][1])) < 0.01
    weighted = cells(page, "Σ")
    total, model_z = weighted[-2], weighted[-1]
    for ours, theirs in zip(total[2:], model_z[2:], strict=True):  # Σ weight × v is the model's own z
        assert abs(float(ours) - float(theirs)) < 0.01
    # the note counts the rows of the chart on screen: its four counts add up to the rows after the first,
    # and the diagonal count is the number of rows whose largest weight is on the diagonal
    note = page.inner_text(".chart-note")
    en = r"(\d+) rows after the first, (\d+) .*?, (\d+) .*?, (\d+) .*?, (\d+) elsewhere"
    zh = r"(\d+) 行里，(\d+) 行.*?(\d+) 行.*?(\d+) 行.*?(\d+) 行"
    pattern = en if lang == "en" else zh
    n, own, *rest = (int(x) for x in re.search(pattern, note).groups())
    assert n == len(weights) - 1 and own + sum(rest) == n
    rows = [[float(x) for x in r[1:]] for r in weights[1:]]
    assert own == sum(1 for i, r in enumerate(rows, start=1) if max(range(len(r)), key=r.__getitem__) == i)
    assert not watched.errors


def test_stage_links_to_its_lab_panel(server: Any, watched: Any) -> None:
    page = watched.page
    open_page(page, server.url, stage="mask", layer=0, lang="en")
    href = page.get_attribute("#lab-link", "href")
    assert href.startswith("/lab?panel=masks&") and href.endswith("#panel-masks")
    open_page(page, server.url, stage="ffn_act", layer=0, lang="en")
    assert page.locator("#lab-link").is_hidden()
    assert not watched.errors
