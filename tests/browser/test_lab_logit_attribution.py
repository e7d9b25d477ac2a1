"""The logit_attribution panel in a real browser: a target and a second token typed into its boxes reach the
answer and the URL, and clicking a head's cell opens that head in the explorer."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx
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


@pytest.mark.browser
def test_a_soft_capped_model_is_refused_in_the_learners_language(browser: Any, tmp_path: Path) -> None:
    """Gemma 2 soft-caps its logits, so they are no sum of parts: the panel says so in EN and ZH, and the server
    refuses the split by name too."""
    from checkpoints import LoadedModel
    from model import Transformer, TransformerConfig
    from tests.browser.models import ServerThread, tiny_models
    from tests.conftest import free_port
    from tests.lab.new_family_models import NEW_FAMILIES

    server = ServerThread(free_port(), tmp_path)
    gpt = tiny_models()["gpt"]
    cfg = TransformerConfig(vocab_size=gpt.model.cfg.vocab_size, d_model=32, n_layers=2, n_heads=4, n_ctx=64,
                            seed=5, **NEW_FAMILIES["gemma2"])
    server.registry.add("capped", LoadedModel(Transformer(cfg).eval(), gpt.tokenizer, {"description": "soft caps"}),
                        source="test")
    server.start()
    page = browser.new_page()
    page.set_default_timeout(20000)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    try:
        said = {}
        for lang in ("en", "zh"):
            open_lab(page, server.url, panel="logit_attribution", model="capped", text="the cat sat", lang=lang)
            page.wait_for_selector("#board-logit_attribution .lab-refused")
            said[lang] = page.inner_text("#board-logit_attribution .lab-refused")
            assert page.query_selector_all("#controls-logit_attribution input") == []
        assert "soft-caps its logits" in said["en"] and "3 · tanh(logit / 3)" in said["en"], said
        assert "软截断" in said["zh"] and "3 · tanh(logit / 3)" in said["zh"], said
        assert not errors, errors
        answer = httpx.post(f"{server.url}/api/lab/logit-attribution", json={"model": "capped", "text": "the cat"})
        assert answer.status_code == 422 and "soft-caps its logits" in answer.text
    finally:
        page.close()
        server.stop()
