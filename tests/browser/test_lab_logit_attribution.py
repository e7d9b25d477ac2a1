"""The logit_attribution panel in a real browser: a target and a second token typed into its boxes reach the
answer and the URL, and clicking a head's cell opens that head in the explorer."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from tests.browser.lab_page import RENDERED_AGAIN, idle, open_lab

CELL = """([x, y]) => {
  const el = document.querySelector('#board-logit_attribution .plot');
  const box = el.getBoundingClientRect(), xa = el._fullLayout.xaxis, ya = el._fullLayout.yaxis;
  return [box.left + xa._offset + xa.d2p(x), box.top + ya._offset + ya.d2p(y)];
}"""


@pytest.mark.browser
def test_tokens_typed_reach_the_answer_and_a_head_cell_opens_the_explorer(watched: Any, server: Any) -> None:
    page = watched.page
    open_lab(page, server.url, panel="logit_attribution", model="gpt", text="the cat sat on the", lang="en")
    for field, token in (("target", "t"), ("versus", "a")):
        before = page.get_attribute("#panel-logit_attribution", "data-rendered")
        page.fill(f"#controls-logit_attribution input[data-field='{field}']", token)
        page.press(f"#controls-logit_attribution input[data-field='{field}']", "Enter")
        page.wait_for_function(RENDERED_AGAIN, arg=before)
        idle(page)
        assert f"logit_attribution.{field}={token}" in page.url
    title = page.inner_text("#board-logit_attribution h3, #board-logit_attribution .card-title")
    assert "“t”" in title and "“a”" in title, title
    x, y = page.evaluate(CELL, ["H2", "layer 1"])
    with page.context.expect_page() as opened:
        page.mouse.click(x, y)
    explorer = opened.value
    query = parse_qs(urlparse(explorer.url).query)
    assert urlparse(explorer.url).path == "/" and query["layer"] == ["1"] and query["head"] == ["2"]
    assert query["model"] == ["gpt"] and query["text"] == ["the cat sat on the"] and query["stage"] == ["softmax"]
    explorer.close()
    assert not watched.errors, watched.errors
