"""Every stage's explanation, rendered by the page's own modules, checked against the model it describes.

For each shipped checkpoint and a set of configs (Pre/Post-LN, RoPE/ALiBi/sinusoidal/learned,
SwiGLU/GELU/ReLU, MHA/GQA/MQA, sliding window, √d_model scaling), the browser imports
static/js/context.js, stages.js and i18n.js and builds every stage's text exactly as the page does
(makeContext). Python then checks the numbers in it against the model: parameter counts and shares
against the weights, the RoPE pairing against model/positional.py, the norm label against the trace.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

import pytest
import torch

from model.config import GATED_ACTIVATIONS
from model.positional import apply_rope, rope_angles
from model.transformer import Transformer, distinct_parameters
from tests.browser.helpers import open_page
from tests.browser.teach_models import BROKEN, CONFIGS, HF_NAME, SHIPPED, api, teach_server_for, torch_model

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def teach_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield from teach_server_for(tmp_path_factory)


RENDER_ALL = """async ({name, lang, text}) => {
  const { makeContext } = await import('/static/js/context.js');
  const { buildPlan } = await import('/static/js/stages.js');
  const { loadTexts } = await import('/static/js/shared/i18n.js');
  const texts = await loadTexts(lang, lang); // the explorer's words: static/text/<lang>.json + shared.<lang>.json
  const info = await (await fetch(`/api/models/${encodeURIComponent(name)}`)).json();
  const posKinds = await (await fetch('/api/positional-encoding/kinds')).json();
  const body = { model: name, text };
  if (info.architecture === 'encoder-decoder') body.target_text = text;
  const tok = await (await fetch('/api/tokenize', {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) })).json();
  const plan = buildPlan(info);
  const out = [];
  for (let index = 0; index < plan.order.length; index++) {
    const s = { lang, texts: { [lang]: texts }, model: name, info, posKinds, plan, index, text, target: text,
                tokens: tok.tokens, targetTokens: tok.target_tokens || null, layer: 0, head: 0, view: 'head',
                compare: false, token: null, snapshot: null };
    const ctx = makeContext(s, null);
    out.push({ id: ctx.step.id, key: ctx.step.key, stack: ctx.step.stack, layer: ctx.layer, text: ctx.text });
  }
  return out;
}"""


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
            gated = cfg["activation"] in GATED_ACTIVATIONS
            n_mats = 3 if gated else 2
            assert str(n_mats) in explain
            mlp_bias = cfg["bias"] if cfg.get("mlp_bias") is None else cfg["mlp_bias"]
            assert ("b₂" in st["text"]["formula"] or "b_down" in st["text"]["formula"]) == bool(mlp_bias)
            if gated:  # the gate's own function, named in the formula (SiLU for SwiGLU, GELU for GeGLU, ...)
                gate_fn = {"silu": "SiLU", "gelu": "GELU", "gelu_tanh": "GELU", "relu": "ReLU"}
                assert gate_fn[GATED_ACTIVATIONS[cfg["activation"]]] + "(x·W_gate" in st["text"]["formula"]
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
