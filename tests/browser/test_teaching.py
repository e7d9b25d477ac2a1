"""Every stage's explanation, rendered by the page's own modules, checked against the model it describes.

For each shipped checkpoint and a set of configs (Pre/Post-LN, RoPE/ALiBi/sinusoidal/learned,
SwiGLU/GELU/ReLU, MHA/GQA/MQA, sliding window, √d_model scaling), the browser imports
static/js/context.js, stages.js and i18n.js and builds every stage's text exactly as the page does
(makeContext). Python then checks the numbers in it against the model: parameter counts and shares
against the weights, the RoPE pairing against model/positional.py, the norm label against the trace.
"""

from __future__ import annotations

import json
import math
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from checkpoints import LoadedModel
from model.config import TransformerConfig
from model.positional import apply_rope, rope_angles
from model.tokenizer import CharTokenizer
from model.transformer import Transformer, distinct_parameters
from tests.browser.helpers import open_page
from tests.browser.models import CHARS, ServerThread
from tests.conftest import free_port

pytestmark = pytest.mark.browser

SHIPPED = ["tiny-gpt", "tiny-translator"]

CONFIGS: dict[str, dict[str, Any]] = {
    # Post-LN LayerNorm, learned positions, GELU, MHA with biases
    "cfg-post-learned-gelu-mha": dict(
        architecture="decoder",
        d_model=32,
        n_layers=2,
        n_heads=4,
        norm="layernorm",
        norm_placement="post",
        pos_encoding="learned",
        activation="gelu",
        bias=True,
    ),
    # Pre-LN RMSNorm, ALiBi, ReLU, MQA, sliding window, no bias
    "cfg-pre-alibi-relu-mqa-window": dict(
        architecture="decoder",
        d_model=32,
        n_layers=2,
        n_heads=4,
        n_kv_heads=1,
        norm="rmsnorm",
        pos_encoding="alibi",
        activation="relu",
        bias=False,
        sliding_window=3,
    ),
    # Post-LN RMSNorm, RoPE, SwiGLU, GQA
    "cfg-post-rope-swiglu-gqa": dict(
        architecture="decoder",
        d_model=32,
        n_layers=2,
        n_heads=4,
        n_kv_heads=2,
        norm="rmsnorm",
        norm_placement="post",
        pos_encoding="rope",
        activation="swiglu",
        bias=False,
        d_mlp=48,
    ),
    # encoder-decoder, sinusoidal, GELU (tanh), √d_model scaling, no bias, Pre-LN
    "cfg-encdec-sinusoidal-scaled": dict(
        architecture="encoder-decoder",
        d_model=32,
        n_layers=1,
        n_decoder_layers=2,
        n_heads=2,
        pos_encoding="sinusoidal",
        activation="gelu_tanh",
        bias=False,
        scale_embeddings=True,
    ),
    # encoder-only, learned positions, Post-LN, ReLU, MHA
    "cfg-encoder-learned-relu": dict(
        architecture="encoder",
        d_model=24,
        n_layers=1,
        n_heads=3,
        pos_encoding="learned",
        norm_placement="post",
        activation="relu",
        final_norm=False,
        lm_head=False,
    ),
}


@pytest.fixture(scope="module")
def teach_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    srv = ServerThread(free_port(), tmp_path_factory.mktemp("teach"), extra_models=True)
    registry = srv.registry
    models = {}
    for name, kwargs in CONFIGS.items():
        tok = CharTokenizer(CHARS, specials=("<s>",))
        cfg = TransformerConfig(vocab_size=tok.vocab_size, n_ctx=64, seed=5, init_std=0.3, **kwargs)
        models[name] = LoadedModel(
            Transformer(cfg).eval(), tok, {"description": name, "bos_token": "<s>", "eos_token": "<s>"}
        )
    for name, loaded in models.items():
        registry.add(name, loaded, source="test")
    srv.torch_models = {name: loaded.model for name, loaded in models.items()}
    yield srv.start()
    srv.stop()


def api(server: Any, path: str, body: dict[str, Any] | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(server.url + path, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request) as response:
        return json.loads(response.read())


RENDER_ALL = """async ({name, lang, text}) => {
  const { makeContext } = await import('/static/js/context.js');
  const { buildPlan } = await import('/static/js/stages.js');
  const { loadTexts } = await import('/static/js/i18n.js');
  const texts = await loadTexts(lang);
  const info = await (await fetch(`/api/models/${encodeURIComponent(name)}`)).json();
  const body = { model: name, text };
  if (info.architecture === 'encoder-decoder') body.target_text = text;
  const tok = await (await fetch('/api/tokenize', {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) })).json();
  const plan = buildPlan(info);
  const out = [];
  for (let index = 0; index < plan.order.length; index++) {
    const s = { lang, texts: { [lang]: texts }, model: name, info, plan, index, text, target: text,
                tokens: tok.tokens, targetTokens: tok.target_tokens || null, layer: 0, head: 0, view: 'head',
                compare: false, token: null, snapshot: null };
    const ctx = makeContext(s, null);
    out.push({ id: ctx.step.id, key: ctx.step.key, stack: ctx.step.stack, layer: ctx.layer, text: ctx.text });
  }
  return out;
}"""


def torch_model(server: Any, name: str) -> Transformer:
    if name in server.torch_models:
        return server.torch_models[name]
    return server.registry.get(name).model


def block_counts(model: Transformer, prefix: str) -> dict[str, int]:
    named = [(n, p.numel()) for n, p in distinct_parameters(model) if n.startswith(prefix)]
    return {
        "total": sum(c for _, c in named),
        "ffn": sum(c for n, c in named if ".mlp." in n),
        "attn": sum(c for n, c in named if ".attn." in n and ".cross_attn." not in n),
    }


def rope_partner(d_head: int) -> int:
    """Which dimension model/positional.py turns together with dimension 0."""
    x = torch.zeros(1, 2, 1, d_head)
    x[0, 1, 0, 0] = 1.0
    out = apply_rope(x, rope_angles(2, d_head))[0, 1, 0]
    moved = [i for i in range(d_head) if abs(float(out[i])) > 1e-6 and i != 0]
    assert len(moved) == 1, moved
    return moved[0]


def fmt(n: int) -> str:
    return f"{n:,}"


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", SHIPPED + list(CONFIGS))
def test_every_explanation_states_the_models_numbers(teach_server: Any, watched: Any, name: str, lang: str) -> None:
    page = watched.page
    models = [m["name"] for m in api(teach_server, "/api/models")]
    if name not in models:
        pytest.skip(f"{name} is not in this checkout's weights")
    open_page(page, teach_server.url, model="gpt", text="ab")
    info = api(teach_server, f"/api/models/{name}")
    cfg = info["config"]
    stages = page.evaluate(
        RENDER_ALL, {"name": name, "lang": lang, "text": "123 45" if "translator" in name else "我爱你 ab"}
    )
    model = torch_model(teach_server, name)
    assert stages, "no stages rendered"
    checked: set[str] = set()
    for st in stages:
        whole = " ".join(st["text"].values())
        assert not re.search(r"⟦|undefined|NaN|\{\w+\}", whole), (st["id"], whole)
        owner = st["stack"] or ("encoder" if info["architecture"] == "encoder-decoder" else "stack")
        counts = block_counts(model, f"{owner}.blocks.{st['layer'] or 0}.")
        explain = st["text"]["explain"]
        if st["key"] == "ffn_out":
            share = round(100 * counts["ffn"] / counts["total"])
            assert f"{share}%" in explain and fmt(counts["ffn"]) in explain and fmt(counts["total"]) in explain, explain
            n_mats = 3 if cfg["activation"] == "swiglu" else 2
            assert str(n_mats) in explain
            assert ("b₂" in st["text"]["formula"]) == bool(cfg["bias"]) or cfg["activation"] == "swiglu"
            checked.add("ffn")
        if st["key"] == "attn_out":
            assert fmt(counts["attn"]) in explain, explain
            d = cfg["d_model"]
            if info["n_kv_heads"] != info["n_heads"]:
                assert f"{d} × {info['n_kv_heads'] * info['d_head']}" in explain, explain
                full = (
                    4 * d * d
                    + (3 * d if (cfg["qkv_bias"] if cfg["qkv_bias"] is not None else cfg["bias"]) else 0)
                    + (d if cfg["bias"] else 0)
                )
                assert fmt(full - counts["attn"]) in explain, explain
            else:
                assert f"{d} × {d}" in explain
            checked.add("attn")
        if st["key"] in ("rope", "pos") and cfg["pos_encoding"] == "rope":
            partner = rope_partner(info["d_head"])
            assert re.search(rf"i ?\+ ?{partner}\b", st["text"]["formula"]), st["text"]["formula"]
            assert not re.search(rf"i ?\+ ?(?!{partner}\b)\d", whole), whole  # no other partner stated
            assert "2i+1" not in whole and "₂ᵢ₊₁" not in whole
            checked.add("rope")
        if st["key"] == "embed":
            assert ("√d_model" in st["text"]["formula"]) == bool(cfg["scale_embeddings"])
            if cfg["scale_embeddings"]:
                assert f"{math.sqrt(cfg['d_model']):.2f}" in st["text"]["formula"]
        if st["key"] == "mask" and cfg.get("sliding_window"):
            assert str(cfg["sliding_window"]) in explain and str(cfg["sliding_window"] - 1) in explain
            checked.add("window")
        if st["key"] == "scale":
            assert f"{math.sqrt(info['d_head']):.2f}" in explain
            assert ("ALiBi" in explain) == (cfg["pos_encoding"] == "alibi")
        if st["key"] == "resid_post" and cfg["norm_placement"] == "post" and lang == "en":
            assert "before its norm" in explain and "is the input of the next block" not in explain
        if st["key"] == "resid_mid" and lang == "en":
            assert ("direct path" in explain) == (cfg["norm_placement"] == "pre")
        if st["key"] == "ln1" and lang == "en":
            assert ("learned shift β" in explain) == (cfg["norm"] == "layernorm"), explain
    if any(s["key"] == "ffn_out" for s in stages):
        assert "ffn" in checked


@pytest.mark.parametrize("name", ["tiny-gpt", "tiny-translator"])
def test_norm_chart_label_is_what_the_trace_records(teach_server: Any, watched: Any, name: str) -> None:
    """hook_scale is the divisor √(var + ε) (or √(mean x² + ε)); the chart must say so, not 1/σ."""
    models = [m["name"] for m in api(teach_server, "/api/models")]
    if name not in models:
        pytest.skip(f"{name} is not in this checkout's weights")
    info = api(teach_server, f"/api/models/{name}")
    cfg = info["config"]
    prefix = "encoder." if info["architecture"] == "encoder-decoder" else ""
    before = (
        f"{prefix}blocks.0.hook_resid_mid_unnormed"
        if cfg["norm_placement"] == "post"
        else f"{prefix}blocks.0.hook_resid_pre"
    )
    scale_name = f"{prefix}blocks.0.ln1.hook_scale"
    text = "en:2026" if "translator" in name else "The animal didn't cross the street"
    trace = api(
        teach_server,
        "/api/trace",
        {"model": name, "text": text, "stages": [before, scale_name], **({"target_text": "two"} if prefix else {})},
    )
    x = torch.tensor(trace["stages"][before]["data"])
    recorded = torch.tensor(trace["stages"][scale_name]["data"])
    if cfg["norm"] == "rmsnorm":
        divisor = (x.pow(2).mean(-1) + cfg["norm_eps"]).sqrt()
    else:
        divisor = (x.var(-1, unbiased=False) + cfg["norm_eps"]).sqrt()
    assert torch.allclose(recorded, divisor, rtol=2e-2, atol=1e-3), (recorded, divisor)
    assert not torch.allclose(recorded, 1 / divisor, rtol=2e-2, atol=1e-3)
    page = watched.page
    open_page(page, teach_server.url, model=name, text=text, stage=f"{prefix}ln1", layer=0, lang="en")
    legend = " ".join(page.eval_on_selector_all("#panel .legendtext", "els => els.map(e => e.textContent)"))
    word = "RMS = √(mean x² + ε)" if cfg["norm"] == "rmsnorm" else "σ = √(var + ε)"
    assert f"divisor {word}" in legend, legend
    assert "1/σ" not in legend and "1/RMS" not in legend
    assert not watched.errors, watched.errors


CHAPTER_IDS = [
    "why",
    "qkv",
    "scores",
    "scale",
    "mask",
    "softmax",
    "weighted",
    "heads",
    "ffn",
    "residual",
    "positions",
    "architectures",
    "efficiency",
    "misconceptions",
]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_lesson_path_opens_every_chapter(server: Any, watched: Any, lang: str) -> None:
    page = watched.page
    open_page(page, server.url, chapter="why", lang=lang)
    for i, cid in enumerate(CHAPTER_IDS):
        if i:
            before = page.get_attribute("#stage", "data-rendered")
            page.click("#chapter-next")
            page.wait_for_function("(b) => document.querySelector('#stage').dataset.rendered !== b", arg=before)
            page.wait_for_function("() => !document.body.classList.contains('busy')")
        assert page.get_attribute("#lesson", "data-chapter") == cid
        assert f"chapter={cid}" in page.url
        assert page.is_hidden("#message"), page.inner_text("#message")
        assert page.inner_text("#lesson .lesson-look").strip()
        if cid in ("ffn", "efficiency"):
            assert page.get_attribute("#sheet", "data-sheet") == "params"
            assert page.locator("#sheet .params-components tbody tr").count() >= 2
        if cid == "architectures":
            assert page.locator("#sheet .arch-table tbody tr").count() == len(api(server, "/api/models"))
    assert not watched.errors, watched.errors


def test_presentation_chart_fills_a_projector(server: Any, watched: Any, artifacts: Path) -> None:
    page = watched.page
    page.set_viewport_size({"width": 1280, "height": 720})
    open_page(page, server.url, stage="softmax", layer=0, present=1, text="我爱北京天安门广场。")
    top, height = page.eval_on_selector(
        "#panel .plot", "e => { const r = e.getBoundingClientRect(); return [r.top, r.height]; }"
    )
    page.screenshot(path=str(artifacts / "present-1280x720.png"))
    assert height >= 0.55 * 720 and top + height <= 720 + 2, (top, height)
    assert page.is_hidden("#explain")
    page.keyboard.press("e")
    page.wait_for_function("() => document.body.classList.contains('explain-open')")
    assert page.is_visible("#explain")
    assert not watched.errors, watched.errors
