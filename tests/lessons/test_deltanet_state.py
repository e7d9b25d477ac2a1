"""The claim kind deltanet_state (lessons/lab_claims.py), chapter "why": the RNN came back, with a matrix for a state.
Its numbers are the shipped tiny-deltanet's on the chapter's sentence; it holds there and fails where they do not."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import torch

from checkpoints import load_checkpoint
from lab.deltanet_head import WEIGHTS, deltanet_head, shipped_hybrid, text_tokens
from lessons import lab_claims
from lessons.chapters import chapters
from lessons.claims import PANELS, measure
from lessons.view import ClaimError, View
from lessons.wording import line, ui_words
from model.config import TransformerConfig
from model.transformer import Transformer


def view_on(model: Transformer, text: str, lang: str, ids: list[int] | None = None) -> View:
    """A view of `text` on `model` (the claim reads only its sentence, or its tokens on a hybrid)."""
    from model.tokenizer import Token

    tokens = [Token(i, str(i), 0, 0) for i in (ids or [])]
    return View(model=model, trace={}, tokens=tokens, text=text, layer=0, head=0, lang=lang)


def chapter_claim(lang: str) -> tuple[str, dict[str, Any]]:
    why = next(c for c in chapters() if c.id == "why").in_lang(lang)
    return why.text, next(c for c in why.claims if c["kind"] == "deltanet_state")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_it_holds_on_the_chapters_sentence_with_the_models_numbers(lang: str) -> None:
    text, asked = chapter_claim(lang)
    tiny_gpt = load_checkpoint(WEIGHTS / "tiny-gpt").model  # the chapter's own model is no hybrid
    claim = measure(view_on(tiny_gpt, text, lang), asked)
    assert claim.holds and PANELS["deltanet_state"] == "linear_attention"
    loaded = shipped_hybrid()
    ids = [t.id for t in text_tokens(loaded, text)]
    real = deltanet_head(loaded.model, ids, asked["layer"], asked["head"])
    cfg = loaded.model.cfg
    values = claim.values
    assert (values["d_value"], values["d_key"]) == (cfg.deltanet_value_dim, cfg.deltanet_key_dim)
    assert values["state_numbers"] == cfg.deltanet_value_dim * cfg.deltanet_key_dim  # type: ignore[operator]
    assert (values["tokens"], values["half"]) == (len(ids), len(ids) // 2)
    assert values["kv_per_token"] == 2 * cfg.kv_heads * cfg.d_head and values["attn_layer"] == 3
    assert values["kv_numbers"] == values["kv_per_token"] * len(ids)
    assert values["change_pct"] == round(100 * real.last_change)
    worded = line("deltanet_state", values, ui_words(lang))
    assert str(values["kv_numbers"]) in worded and f"{values['change_pct']}" in worded and "{" not in worded
    if lang == "zh":
        assert f"层 {asked['layer']}、头 {asked['head']}" in worded and "第" not in worded


def test_it_fails_when_the_numbers_do_not_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same claim on doctored measurements: a state that grew with the text, a last token that changed nothing."""
    text, asked = chapter_claim("en")
    tiny_gpt = load_checkpoint(WEIGHTS / "tiny-gpt").model
    loaded = shipped_hybrid()
    real = deltanet_head(loaded.model, [t.id for t in text_tokens(loaded, text)], asked["layer"], asked["head"])
    for doctored in (dataclasses.replace(real, half_state_shape=(real.d_value, real.d_key // 2)),
                     dataclasses.replace(real, change=torch.cat((real.change[:-1], torch.zeros(1))))):
        monkeypatch.setattr(lab_claims, "_deltanet_head", lambda *_args, d=doctored: d)
        assert not measure(view_on(tiny_gpt, text, "en"), asked).holds


def test_it_fails_on_a_hybrid_with_no_attention_layer() -> None:
    """On a hybrid of the view's own (every layer DeltaNet) there is no K/V cache to set against the state."""
    cfg = TransformerConfig(vocab_size=50, d_model=32, n_layers=2, n_heads=2, d_mlp=64, n_ctx=32, norm="rmsnorm",
                            activation="swiglu", bias=False, pos_encoding="rope", qk_norm=True,
                            deltanet_layers=(0, 1), deltanet_key_heads=1, deltanet_value_heads=2,
                            deltanet_key_dim=8, deltanet_value_dim=8, deltanet_conv=4, attn_output_gate=True)
    claim = measure(view_on(Transformer(cfg).eval(), "abcd", "en", ids=[1, 2, 3, 4]),
                    {"kind": "deltanet_state", "layer": 1, "head": 0})
    assert not claim.holds and claim.values["kv_per_token"] == 0 and claim.values["state_numbers"] == 64


def test_what_it_cannot_read_is_a_claim_error() -> None:
    tiny_gpt = load_checkpoint(WEIGHTS / "tiny-gpt").model
    with pytest.raises(ClaimError, match="layer 3 is not a gated DeltaNet layer"):
        measure(view_on(tiny_gpt, "hello", "en"), {"kind": "deltanet_state", "layer": 3, "head": 0})
    with pytest.raises(ClaimError, match="not 'pe-rope'"):
        measure(view_on(tiny_gpt, "hello", "en"), {"kind": "deltanet_state", "layer": 0, "head": 0,
                                                   "model": "pe-rope"})
