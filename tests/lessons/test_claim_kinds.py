"""The lessons package's tables, without a model: one table of claim kinds that lists every kind written, chapters
that name only kinds of it, one list of languages, and loaders that refuse what they do not hold."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

from lessons import chapters, claims, lab_claims, trace_claims
from lessons.languages import LANGS
from lessons.view import Claim, ClaimError, covering
from lessons.wording import line, ui_words
from model.tokenizer import Token

ROOT = Path(__file__).resolve().parents[2]


def kinds_written() -> dict[str, object]:
    """Every public function of the two kind modules that returns a Claim: each is a claim kind."""
    return {name: fn for module in (trace_claims, lab_claims)
            for name, fn in inspect.getmembers(module, inspect.isfunction)
            if fn.__module__ == module.__name__ and not name.startswith("_")
            and inspect.signature(fn).return_annotation in (Claim, "Claim")}


def test_the_one_table_lists_every_kind_written_under_its_own_name() -> None:
    written = kinds_written()
    assert set(written) == set(claims.KINDS), set(written) ^ set(claims.KINDS)
    assert all(claims.KINDS[name] is fn for name, fn in written.items())


def test_no_other_package_keeps_a_table_of_claim_kinds() -> None:
    assert not (ROOT / "analysis" / "claims.py").exists() and not (ROOT / "lab" / "claims.py").exists()
    assert not (ROOT / "app" / "lessons").exists()


def test_every_chapter_names_kinds_of_the_table_in_every_language() -> None:
    listed = chapters.chapters()
    assert listed
    for chapter in listed:
        for lang in LANGS:
            assert {c["kind"] for c in chapter.in_lang(lang).claims} <= set(claims.KINDS), (chapter.id, lang)
    page = chapters.for_page()
    assert all(set(LANGS) <= set(entry) for entry in page)


def test_every_kind_has_its_line_in_every_language() -> None:
    for lang in LANGS:
        words = ui_words(lang)
        for kind in claims.KINDS:
            assert f"claim_{kind}" in words or any(k.startswith(f"claim_{kind}_") for k in words), (lang, kind)


def test_the_languages_are_the_text_files() -> None:
    for lang in LANGS:
        assert json.loads((ROOT / "static" / "text" / f"{lang}.json").read_text(encoding="utf-8"))["language"] == lang


def test_unknown_languages_and_kinds_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="fr"):
        ui_words("fr")
    with pytest.raises(ValueError, match="fr"):
        chapters.chapters()[0].in_lang("fr")
    with pytest.raises(ClaimError, match="nope"):
        claims.measure(None, {"kind": "nope"})  # type: ignore[arg-type]


def test_a_word_not_in_the_sentence_is_a_claim_error() -> None:
    tokens = [Token(id=1, text="the", start=0, end=3), Token(id=2, text=" cat", start=3, end=7)]
    assert covering(tokens, "the cat", "cat") == [1]
    with pytest.raises(ClaimError, match="dog"):
        covering(tokens, "the cat", "dog")


def test_a_line_is_worded_from_the_text_files_with_the_measured_values() -> None:
    values = {"n_heads": 6, "n_kv": 2, "ratio": 3}
    en, zh = (line("kv_heads", values, ui_words(lang)) for lang in ("en", "zh"))
    assert en != zh and all("6" in said and "2" in said and "{" not in said for said in (en, zh))
