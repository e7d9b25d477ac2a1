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

from app.catalogue import add_directory, add_minilm
from checkpoints import LoadedModel
from model.config import TransformerConfig
from model.positional import apply_rope, rope_angles
from model.tokenizer import CharTokenizer
from model.transformer import Transformer, distinct_parameters
from tests.browser.helpers import open_page
from tests.browser.models import CHARS, ServerThread
from tests.conftest import free_port

pytestmark = pytest.mark.browser

SHIPPED = [
    "tiny-gpt",
    "tiny-translator",
    "minilm",
    "pe-alibi",
    "pe-learned",
    "pe-none",
    "pe-rope",
    "pe-rope-window",
    "pe-sinusoidal",
]
# a rendered text never shows these: a missing value, a failed lookup, an unfilled placeholder
BROKEN = re.compile(r"⟦|\bnull\b|\bundefined\b|\bNaN\b|\{\w+\}")

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
    # encoder-only, Pre-LN RMSNorm, RoPE, GELU
    "cfg-encoder-pre-rope": dict(
        architecture="encoder",
        d_model=32,
        n_layers=1,
        n_heads=4,
        norm="rmsnorm",
        pos_encoding="rope",
        activation="gelu",
        lm_head=False,
    ),
    # encoder-decoder, Post-LN LayerNorm, learned positions, ReLU, GQA
    "cfg-encdec-post-learned-gqa": dict(
        architecture="encoder-decoder",
        d_model=32,
        n_layers=1,
        n_decoder_layers=1,
        n_heads=4,
        n_kv_heads=2,
        norm_placement="post",
        pos_encoding="learned",
        activation="relu",
    ),
    # decoder-only, Pre-LN LayerNorm, sinusoidal, GELU, MHA with biases
    "cfg-pre-sinusoidal-gelu": dict(
        architecture="decoder",
        d_model=32,
        n_layers=2,
        n_heads=4,
        pos_encoding="sinusoidal",
        activation="gelu",
        bias=True,
    ),
    # decoder-only without positions, Post-LN RMSNorm
    "cfg-post-none-rms": dict(
        architecture="decoder",
        d_model=16,
        n_layers=1,
        n_heads=2,
        norm="rmsnorm",
        norm_placement="post",
        pos_encoding="none",
        activation="relu",
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


HF_NAME = "hf-llama-30"


def llama_30(path: Path) -> Path | None:
    """A Llama-format directory (config.json, safetensors, tokenizer.json) with random weights."""
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=300,
        hidden_size=36,
        intermediate_size=96,
        num_hidden_layers=30,
        num_attention_heads=9,
        num_key_value_heads=3,
        max_position_embeddings=64,
    )
    transformers.LlamaForCausalLM(config).eval().save_pretrained(path, safe_serialization=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tok.train_from_iterator(["the cat sat on the mat", "我爱北京天安门"] * 5, trainer)
    tok.save(str(path / "tokenizer.json"))
    return path


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
    # a Hugging Face directory as a user adds one: a 30-layer Llama (RMSNorm, RoPE, SwiGLU, GQA 9/3)
    hf_dir = llama_30(tmp_path_factory.mktemp("hf-llama"))
    if hf_dir is not None:
        add_directory(registry, HF_NAME, hf_dir, source="test")
    add_minilm(registry)  # when its package is installed
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
  const { loadTexts } = await import('/static/js/shared/i18n.js');
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
@pytest.mark.parametrize("name", SHIPPED + [HF_NAME] + list(CONFIGS))
def test_every_explanation_states_the_models_numbers(teach_server: Any, watched: Any, name: str, lang: str) -> None:
    page = watched.page
    models = [m["name"] for m in api(teach_server, "/api/models")]
    if name not in models:
        pytest.skip(f"{name} is not in this checkout's weights")
    open_page(page, teach_server.url, model="gpt", text="ab")
    info = api(teach_server, f"/api/models/{name}")
    cfg = info["config"]
    text = "123 45" if "translator" in name else "我爱你 ab"
    stages = page.evaluate(RENDER_ALL, {"name": name, "lang": lang, "text": text})
    body = {"model": name, "text": text, **({"target_text": text} if info["architecture"] == "encoder-decoder" else {})}
    tokens = api(teach_server, "/api/tokenize", body)["tokens"]
    model = torch_model(teach_server, name)
    assert stages, "no stages rendered"
    checked: set[str] = set()
    placement = cfg["norm_placement"]
    layernorm = cfg["norm"] == "layernorm"
    for st in stages:
        whole = " ".join(st["text"].values())
        assert not BROKEN.search(whole), (st["id"], whole)
        assert "第 0" not in whole, (st["id"], whole)
        decoder_of_encdec = info["architecture"] == "encoder-decoder" and st["stack"] == "decoder"
        if st["key"] in ("ln2", "ln_cross"):  # the norm's own parameters and its divisor, named
            assert ("β" in st["text"]["explain"]) == layernorm, st["text"]["explain"]
            assert ("σ = √(" in st["text"]["explain"]) == layernorm and (
                "RMS = √(" in st["text"]["explain"]
            ) != layernorm
        if st["key"] == "ln_cross" and lang == "en":
            assert ("before cross-attention" if placement == "pre" else "after the cross-attention result") in whole
        if st["key"] in ("resid_mid", "resid_post", "resid_cross"):  # the formula says where the norm sits
            formula = st["text"]["formula"]
            assert ("Norm(x +" in formula) == (placement == "post") and ("(Norm(x)" in formula) == (placement == "pre")
        if st["key"] == "resid_post" and lang == "en":
            assert ("three sub-layers" in whole) == decoder_of_encdec, whole
            assert "second residual addition" not in whole
            assert ("This addition ends the block" in whole) == (placement == "pre"), whole
            if placement == "post":
                assert "The norm in the next stage ends the block" in whole
        if st["key"] == "resid_mid" and lang == "en":
            assert ("the residual stream is a running sum" in whole) == (placement == "pre"), whole
        if st["key"] in ("scale", "pos") and cfg["pos_encoding"] == "alibi" and st["key"] == "scale":
            assert "m_h" in st["text"]["formula"], st["text"]["formula"]
        if st["key"] == "pos" and cfg["pos_encoding"] == "alibi":
            causal = info["architecture"] != "encoder"
            assert ("j ≤ i" in st["text"]["formula"]) == causal and ("|i − j|" in st["text"]["formula"]) != causal
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
            w = cfg["sliding_window"]
            assert str(w) in explain and str(w - 1) in explain
            n = len(tokens)
            hidden = sum(max(0, i - w + 1) for i in range(n))  # keys i − j ≥ w with j ≤ i
            assert (
                f"({n} " in explain and f"hides {hidden} cells" in explain
                if lang == "en"
                else f"{hidden} 个格子" in explain
            )
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


RENDER_CHAPTERS = """async ({name, lang, text}) => {
  const { CHAPTERS } = await import('/static/js/lessons.js');
  const { lessonText } = await import('/static/js/teach.js');
  const { loadTexts } = await import('/static/js/i18n.js');
  const texts = await loadTexts(lang);
  const info = await (await fetch(`/api/models/${encodeURIComponent(name)}`)).json();
  const tok = await (await fetch('/api/tokenize', {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: name, text }) })).json();
  return { n: tok.tokens.length,
           chapters: CHAPTERS.map((c) => ({ id: c.id, ...lessonText(texts, info, tok.tokens, name, c.id) })) };
}"""


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", SHIPPED + [HF_NAME] + list(CONFIGS))
def test_every_chapter_states_the_models_numbers(teach_server: Any, watched: Any, name: str, lang: str) -> None:
    """Each chapter's title, body and 'what to look at', written for this model, with its numbers."""
    if name not in [m["name"] for m in api(teach_server, "/api/models")]:
        pytest.skip(f"{name} is not in this checkout's weights")
    page = watched.page
    open_page(page, teach_server.url, model="gpt", text="ab")
    info = api(teach_server, f"/api/models/{name}")
    cfg = info["config"]
    out = page.evaluate(RENDER_CHAPTERS, {"name": name, "lang": lang, "text": "我爱你"})
    n = out["n"]
    by_id = {c["id"]: c for c in out["chapters"]}
    assert list(by_id) == CHAPTER_IDS
    for c in out["chapters"]:
        whole = " ".join(c[f] for f in ("title", "body", "look"))
        assert all(c[f].strip() for f in ("title", "body", "look")), c
        assert not BROKEN.search(whole), (c["id"], whole)
        assert "第 0" not in whole, (c["id"], whole)
    d, heads, d_head = cfg["d_model"], info["n_heads"], info["d_head"]
    qkv, scores, residual = by_id["qkv"]["body"], by_id["scores"]["body"], by_id["residual"]["body"]
    if lang == "en":
        assert f"{n} tokens, d_model {d} = {heads} heads × {d_head}" in qkv, qkv
        assert f"its table is {n} × {n}" in scores and f"each of the {heads} heads" in scores, scores
        placement = "Post-Norm" if cfg["norm_placement"] == "post" else "Pre-Norm"
        assert f"{name} is {placement}" in residual, residual
        assert (
            "O(n²·d)" in by_id["efficiency"]["body"] and "memory for the table as O(n²)" in by_id["efficiency"]["body"]
        )
    else:
        assert f"{n} 个 Token，d_model {d} = {heads} 个头 × {d_head} 维" in qkv, qkv
        assert f"{n} × {n}" in scores, scores
        assert ("后置归一化" if cfg["norm_placement"] == "post" else "前置归一化") in residual.split("：")[0] + residual
        assert f"{name} 和" in residual, residual
    assert not watched.errors, watched.errors


@pytest.mark.parametrize("chapter", ["6", "softmax"])
def test_a_chapter_opens_by_number_or_by_id(server: Any, watched: Any, chapter: str) -> None:
    page = watched.page
    open_page(page, server.url, chapter=chapter)
    assert page.get_attribute("#lesson", "data-chapter") == "softmax"
    assert page.inner_text("#lesson .lesson-kicker").startswith("Lesson · chapter 6 of")
    assert "chapter=softmax" in page.url
    assert not watched.errors, watched.errors


def test_lesson_bar_never_prints_null(server: Any, watched: Any) -> None:
    """A chapter without a picked head has no pick line at all (it printed 'null' before)."""
    page = watched.page
    for cid in ("why", "scores", "softmax"):
        open_page(page, server.url, chapter=cid)
        assert not BROKEN.search(page.inner_text("#lesson")), page.inner_text("#lesson")
        texts = page.eval_on_selector_all("#lesson p", "els => els.map(e => e.textContent.trim())")
        assert all(texts), texts
    assert not watched.errors, watched.errors


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_chapter_shows_its_chart_on_the_first_screen(server: Any, watched: Any, lang: str) -> None:
    """At 1280×720, outside presentation mode, at least 200 px of each chapter's chart is on screen."""
    page = watched.page
    page.set_viewport_size({"width": 1280, "height": 720})
    for cid in CHAPTER_IDS:
        open_page(page, server.url, chapter=cid, lang=lang)
        page.wait_for_timeout(50)  # the chapter scrolls to its lesson bar on the next frame
        top = page.eval_on_selector("#panel .plot", "e => e.getBoundingClientRect().top")
        assert top <= 720 - 200, (cid, top)
        links = page.locator("a.lab-link:visible").count()
        assert links <= 1, (cid, links)  # "try it in the lab" once per chapter
    assert not watched.errors, watched.errors


def test_presentation_shows_the_chapter_text_on_e(server: Any, watched: Any) -> None:
    page = watched.page
    page.set_viewport_size({"width": 1280, "height": 720})
    open_page(page, server.url, chapter="softmax", present=1)
    assert page.is_hidden("#lesson .lesson-body")
    assert "POST" not in page.inner_text("body") and "/api/" not in page.inner_text("body")
    page.keyboard.press("e")
    page.wait_for_function("() => document.body.classList.contains('explain-open')")
    assert page.is_visible("#lesson .lesson-body") and page.is_visible("#explain")
    size = page.eval_on_selector(
        "#panel .plot .textpoint text, #panel .plot g.hm text", "e => parseFloat(getComputedStyle(e).fontSize)"
    )
    assert size >= 14, size  # cell numbers of an 11-token heatmap, read from the back of a room
    assert not watched.errors, watched.errors


def test_alibi_charts_say_what_they_show(teach_server: Any, watched: Any) -> None:
    """pe-alibi: the later keys of the bias map are blank (masked), and the scaled scores are named with −m·distance."""
    if "pe-alibi" not in [m["name"] for m in api(teach_server, "/api/models")]:
        pytest.skip("pe-alibi is not in this checkout's weights")
    page = watched.page
    open_page(page, teach_server.url, model="pe-alibi", text="我爱你", stage="pos", lang="en")
    z = page.evaluate("() => document.querySelector('#panel .plot').data[0].z")
    assert all(z[i][j] is None for i in range(len(z)) for j in range(i + 1, len(z))), z
    assert all(z[i][j] is not None for i in range(len(z)) for j in range(i + 1)), z
    open_page(page, teach_server.url, model="pe-alibi", text="我爱你", stage="scale", layer=0, lang="en")
    caption = page.inner_text("#panel .worked-table caption >> nth=1")
    assert "m·distance" in caption, caption
    hover = page.evaluate("() => document.querySelector('#panel .plot').data[0].hovertemplate")
    assert "÷√d_k − m·distance" in hover, hover
    assert "m_h" in page.inner_text("#formula")
    assert not watched.errors, watched.errors


def test_positions_chapter_draws_angles_one_sided_and_every_curve(server: Any, watched: Any) -> None:
    page = watched.page
    open_page(page, server.url, chapter="positions")
    angles = page.evaluate(
        "() => { const d = document.querySelector('#panel .plot[data-key=angles]').data[0]; "
        "return [d.zmin, d.zmax, Math.min(...d.z.flat())]; }"
    )
    assert angles[0] == 0 and angles[2] >= 0 and angles[1] > 0, angles  # θ ≥ 0: no diverging ±scale
    styles = page.evaluate(
        "() => document.querySelector('#panel .plot[data-key=curves]').data.map((t) => [t.line.dash, t.marker.symbol])"
    )
    assert len({tuple(s) for s in styles}) == len(styles) >= 2, styles  # curves lying on each other stay apart
    assert not watched.errors, watched.errors


def test_chinese_axis_title_fits_its_chart_in_presentation(server: Any, watched: Any) -> None:
    page = watched.page
    page.set_viewport_size({"width": 1280, "height": 720})
    open_page(page, server.url, chapter="scores", present=1, lang="zh")
    box = page.eval_on_selector(
        "#panel .plot .ytitle", "e => { const r = e.getBoundingClientRect(); return [r.top, r.bottom]; }"
    )
    svg = page.eval_on_selector(
        "#panel .plot .main-svg", "e => { const r = e.getBoundingClientRect(); return [r.top, r.bottom]; }"
    )
    assert svg[0] <= box[0] and box[1] <= svg[1], (box, svg)
    assert not watched.errors, watched.errors


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_why_chapter_counts_rnn_against_attention_on_the_sentence(server: Any, watched: Any, lang: str) -> None:
    """The counts follow from the formulas on the sentence's own tokens, and the caption says so."""
    page = watched.page
    open_page(page, server.url, chapter="why", lang=lang)
    model, text = page.input_value("#model"), page.input_value("#text")
    n = len(api(server, "/api/tokenize", {"model": model, "text": text})["tokens"])
    info = api(server, f"/api/models/{model}")
    cells = page.eval_on_selector_all(
        "#lesson .lesson-demo tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
    )
    assert [row[1:] for row in cells[:3]] == [[str(n), "1"], [str(n - 1), "1"], ["0", str(n * (n + 1) // 2)]], cells
    assert str(info["config"]["d_model"]) in cells[3][1] and str(n) in cells[3][2], cells
    caption = page.inner_text("#lesson .lesson-demo caption")
    assert str(n) in caption and ("not measured" in caption if lang == "en" else "不是实测" in caption), caption
    assert not watched.errors, watched.errors
