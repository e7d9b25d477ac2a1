"""The question kinds without a model: one table that lists every kind written, texts for each in every language,
a near tie refused as no well-defined answer, and answers checked by type with no model and no server state."""

from __future__ import annotations

import inspect
import math

import pytest
import torch

from lessons import question_kinds, questions
from lessons.chapters import chapters
from lessons.languages import LANGS
from lessons.view import Question, QuestionError, View
from lessons.wording import ui_words
from model.hooks import stage_name
from model.tokenizer import Token


def test_the_one_table_lists_every_kind_written_under_its_own_name() -> None:
    written = {name: fn for name, fn in inspect.getmembers(question_kinds, inspect.isfunction)
               if fn.__module__ == question_kinds.__name__ and not name.startswith("_")
               and inspect.signature(fn).return_annotation in (Question, "Question")}
    assert set(written) == set(questions.QUESTION_KINDS), set(written) ^ set(questions.QUESTION_KINDS)
    assert all(questions.QUESTION_KINDS[name] is fn for name, fn in written.items())


def test_every_kind_and_choice_has_its_words_in_every_language() -> None:
    for lang in LANGS:
        words = ui_words(lang)
        for kind in questions.QUESTION_KINDS:
            assert f"question_{kind}" in words and f"question_{kind}_why" in words, (lang, kind)
        for value in ("up", "down", "longer", "shorter", "never"):
            assert f"question_opt_{value}" in words, (lang, value)


def test_every_chapter_asks_at_least_one_question_with_the_same_ids_in_every_language() -> None:
    for chapter in chapters():
        ids = {lang: [q["id"] for q in chapter.in_lang(lang).questions] for lang in LANGS}
        assert ids["en"] and all(i == ids["en"] for i in ids.values()), (chapter.id, ids)
        assert all(q["kind"] in questions.QUESTION_KINDS for lang in LANGS for q in chapter.in_lang(lang).questions)


def _view(row_weights: list[float]) -> View:
    """A one-layer view of a causal head whose last row has `row_weights` (no model: the row kinds need none)."""
    n = len(row_weights)
    pattern = torch.eye(n)
    pattern[-1] = torch.tensor(row_weights)
    scores = torch.zeros(n, n).masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    trace = {stage_name("pattern", 0): pattern[None, None], stage_name("attn_scores", 0): scores[None, None]}
    text = "abcd"[:n]
    tokens = [Token(id=i, text=ch, start=i, end=i + 1) for i, ch in enumerate(text)]
    return View(model=None, trace=trace, tokens=tokens, text=text, layer=0, head=0)  # type: ignore[arg-type]


def test_the_top_token_is_measured_and_a_near_tie_has_no_answer() -> None:
    asked = question_kinds.row_top_token(_view([0.1, 0.6, 0.3]))
    assert (asked.answer, asked.accepted, asked.measured, asked.values["second"]) == (1, (1,), 0.6, "c")
    with pytest.raises(QuestionError, match="within"):
        question_kinds.row_top_token(_view([0.2, 0.396, 0.404]))


ASKED = {"answer_type": "number", "answer": 5632, "accepted": [], "tolerance": 56, "measured": 5632, "why": "w",
         "options": []}
TOKEN = {"answer_type": "token", "answer": 5, "accepted": [3, 4, 5], "tolerance": 0, "measured": 0.46, "why": "w",
         "options": [{"value": i, "label": str(i)} for i in range(6)]}
BLOCK = {"answer_type": "block", "answer": "never", "accepted": ["never"], "tolerance": 0, "measured": "x",
         "why": "w", "options": [{"value": 0, "label": "0"}, {"value": "never", "label": "never"}]}


@pytest.mark.parametrize(("question", "given", "correct"), [
    (ASKED, "5632", True), (ASKED, 5680, True), (ASKED, "5689", False), (ASKED, 5575.5, False),
    (TOKEN, "3", True), (TOKEN, 4, True), (TOKEN, "2", False),
    (BLOCK, "never", True), (BLOCK, "0", False),
])
def test_an_answer_is_checked_on_the_asked_question_alone(question: dict, given: object, correct: bool) -> None:
    assert questions.verdict(question, given).correct is correct


@pytest.mark.parametrize(("question", "given"), [
    (ASKED, "many"), (ASKED, math.inf), (ASKED, True), (TOKEN, "9"), (TOKEN, "it"), (TOKEN, "-1"), (BLOCK, "5"),
    ({"answer_type": None}, "1"),
])
def test_an_answer_of_the_wrong_type_is_refused_by_name(question: dict, given: object) -> None:
    with pytest.raises(questions.AnswerError, match="this question"):
        questions.verdict(question, given)
