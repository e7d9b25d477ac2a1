"""The router step of a Qwen3.5-MoE-shaped model (gated DeltaNet layers, experts and a shared expert in every layer):
the page draws the shared expert's gate per token beside the routed experts, and its gated output, and the step's
formula and explanation name the shared expert and its width, in English and in Chinese; no script error."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import Watched
from tests.browser.helpers import open_page

TEXT = "the cat sat on the mat"


@pytest.fixture(scope="module")
def moe_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from checkpoints import LoadedModel
    from model.tokenizer import CharTokenizer
    from tests.app.test_qwen35_app import EXPERTS, hybrid_model
    from tests.browser.models import ServerThread
    from tests.conftest import free_port

    srv = ServerThread(free_port(), Path(tmp_path_factory.mktemp("moe")))
    tok = CharTokenizer("abcdefghijklmnopqrstuvwxyz ", specials=("<s>",))
    srv.registry.add("hybrid_moe", LoadedModel(hybrid_model(tok, **EXPERTS), tok, {
        "description": "a tiny Qwen3.5-MoE-shaped hybrid", "bos_token": "<s>", "eos_token": "<s>"}), source="test")
    srv.start()
    yield srv
    srv.stop()


@pytest.mark.parametrize(("lang", "words"), [("en", "shared expert"), ("zh", "共享专家")])
def test_the_router_step_draws_the_shared_expert(moe_server: Any, watched: Watched, lang: str, words: str) -> None:
    page = watched.page
    open_page(page, moe_server.url, model="hybrid_moe", text=TEXT, stage="router", layer=1, lang=lang)
    keys = page.eval_on_selector_all("#panel .chart-card", "els => els.map(e => e.dataset.key)")
    assert keys[:4] == ["probs", "weights", "shared", "shared_out"] and "layers" in keys, keys
    bars = page.eval_on_selector_all('#panel .chart-card[data-key="shared"] .plot .bars path', "els => els.length")
    assert bars == len(TEXT) + 1, bars  # one bar per token: the start token and one per character
    assert "W_shared_gate" in page.inner_text("#formula") and "24" in page.inner_text("#formula")
    assert words in page.inner_text("#explain")
    # the model's config line names the shared expert too
    assert ("shared expert (24 wide)" if lang == "en" else "共享专家（宽 24）") in page.inner_text("body")
    assert watched.errors == [] and watched.dialogs == []
