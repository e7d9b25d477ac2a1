"""The router step of a Qwen3.5-MoE-shaped model (gated DeltaNet layers, experts and a shared expert in every layer):
the page draws the shared expert's gate per token beside the routed experts, and its gated output, and the step's
formula and explanation name the shared expert and its width, in English and in Chinese; and of a Gemma-4-shaped
model whose experts run beside the FFN, whose texts say so and whose page draws the block's two summands (the dense
FFN's output and the experts' sum: each token's length of each, their means as the model gives them, and both
vectors). No script error."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import Watched
from tests.browser.helpers import open_page
from tests.browser.test_gemma4_nope_views import screenshot

TEXT = "the cat sat on the mat"


@pytest.fixture(scope="module")
def moe_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from checkpoints import LoadedModel
    from model import Transformer, TransformerConfig
    from model.tokenizer import CharTokenizer
    from tests.app.test_qwen35_app import EXPERTS, hybrid_model
    from tests.browser.models import ServerThread
    from tests.conftest import free_port
    from tests.model.test_ffn_beside_experts import scales_away_from_one

    srv = ServerThread(free_port(), Path(tmp_path_factory.mktemp("moe")))
    tok = CharTokenizer("abcdefghijklmnopqrstuvwxyz ", specials=("<s>",))
    srv.registry.add("hybrid_moe", LoadedModel(hybrid_model(tok, **EXPERTS), tok, {
        "description": "a tiny Qwen3.5-MoE-shaped hybrid", "bos_token": "<s>", "eos_token": "<s>"}), source="test")
    gemma = TransformerConfig(  # Gemma 4's MoE block: experts beside each FFN, norms after each sub-layer
        vocab_size=tok.vocab_size, d_model=32, n_layers=2, n_heads=4, n_ctx=64, seed=5, init_std=0.3,
        pos_encoding="rope", norm="rmsnorm", activation="geglu_tanh", bias=False, post_norms=True, n_experts=4,
        n_experts_used=2, expert_d_mlp=16, expert_norm_topk=True, experts_beside_mlp=True)
    srv.registry.add("gemma_moe", LoadedModel(scales_away_from_one(Transformer(gemma).eval()), tok, {
        "description": "a tiny Gemma-4-MoE-shaped model", "bos_token": "<s>", "eos_token": "<s>"}), source="test")
    srv.start()
    yield srv
    srv.stop()


def layer1_stage(server: Any, hook: str) -> Any:
    """Layer 1's `mlp.hook_<hook>` on TEXT (with its start token), from the model: [pos, ...]."""
    import torch

    loaded = server.registry.get("gemma_moe")
    ids = [loaded.tokenizer.special_to_id["<s>"], *(t.id for t in loaded.tokenizer.encode(TEXT))]
    _, trace = loaded.model.run_with_trace(torch.tensor([ids]))
    return trace[f"blocks.1.mlp.hook_{hook}"][0]


def mean_lengths(server: Any) -> list[float]:
    """Layer 1's mean length over the tokens of its dense FFN's output and of its experts' sum, from the model."""
    import torch

    loaded = server.registry.get("gemma_moe")
    ids = [loaded.tokenizer.special_to_id["<s>"], *(t.id for t in loaded.tokenizer.encode(TEXT))]
    _, trace = loaded.model.run_with_trace(torch.tensor([ids]))
    return [trace[f"blocks.1.mlp.hook_{s}"][0].norm(dim=-1).mean().item() for s in ("dense_out", "experts_out")]


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


@pytest.mark.parametrize(("lang", "words"), [("en", "beside the FFN"), ("zh", "和前馈网络并排运行")])
def test_the_router_step_of_experts_beside_the_ffn(moe_server: Any, watched: Watched, lang: str, words: str,
                                                   tmp_path: Path, artifacts: Path) -> None:
    page = watched.page
    open_page(page, moe_server.url, model="gemma_moe", text=TEXT, stage="router", layer=1, lang=lang)
    keys = page.eval_on_selector_all("#panel .chart-card", "els => els.map(e => e.dataset.key)")
    assert keys[:7] == ["router_in", "experts_in", "probs", "weights", "beside", "dense_out", "experts_out"], keys
    assert "shared" not in keys
    for hook in ("router_in", "experts_in"):  # what the router and the experts read: the model's numbers
        z = page.evaluate(f"""() => document.querySelector('#panel .chart-card[data-key="{hook}"] .plot').data[0].z""")
        want = layer1_stage(moe_server, hook)
        assert len(z) == want.shape[0] and len(z[0]) == want.shape[1], (hook, len(z), len(z[0]))
        pairs = zip(z, want.tolist(), strict=True)
        diff = max(abs(a - b) for row, wrow in pairs for a, b in zip(row, wrow, strict=True))
        assert diff <= 1e-3 * want.abs().max().item(), (hook, diff)  # the page's numbers come as float16
    page.evaluate("document.querySelector('#panel').scrollIntoView()")
    screenshot(page, artifacts / f"gemma4_moe_router_inputs.{lang}.png")
    bars = page.eval_on_selector_all('#panel .chart-card[data-key="beside"] .plot .bars path', "els => els.length")
    assert bars == 2 * (len(TEXT) + 1), bars  # two bars per token: the dense FFN's and the experts'
    note = page.inner_text('#panel .chart-card[data-key="beside"] .chart-note')
    shown = [float(x) for x in re.findall(r"(\d+\.\d\d)（?\s?\(?(?:FFN|experts|前馈网络|专家)", note)]
    assert shown == pytest.approx(mean_lengths(moe_server), abs=0.006), (shown, note)
    page.locator('#panel .chart-card[data-key="beside"]').screenshot(path=str(tmp_path / f"beside.{lang}.png"))
    assert "router_scale" not in page.inner_text("#formula") and "√d_model" in page.inner_text("#formula")
    assert words in page.inner_text("#explain")
    open_page(page, moe_server.url, model="gemma_moe", text=TEXT, stage="ffn_in", layer=1, lang=lang)  # FFN too
    assert page.eval_on_selector_all("#panel .chart-card", "els => els.length") > 0
    assert watched.errors == [] and watched.dialogs == []
