"""The one table of question kinds, and how a question is asked on a view and an answer checked (issue 42).

A kind is a function `(view, **its words) -> Question` (lessons/question_kinds.py), beside the claim kinds
(lessons/claims.py) and reading the same numbers. `asked()` measures a chapter's questions on a view and words
them in the view's language (ui.question_<kind>, the prompt, and ui.question_<kind>_why, the one line the reveal
prints, in static/text/<lang>.json); `verdict()` checks a student's answer against an asked question, with no
model and no server state, so a page alone and a class server check the same way. The chapters name their
questions as data (lessons/chapters.json `questions`: an id, stable across languages, a kind and its words);
lessons/chapter_questions.py finds them by chapter and id.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lessons import question_kinds
from lessons.view import Answer, ClaimError, Question, QuestionError, View
from lessons.wording import shown, ui_words

QUESTION_KINDS: dict[str, Callable[..., Question]] = {
    "row_top_token": question_kinds.row_top_token,  # a token pick
    "lens_first_top": question_kinds.lens_first_top,  # a block pick (or "never")
    "unscaled_row_peak": question_kinds.unscaled_row_peak,  # a choice: up or down
    "residual_grows": question_kinds.residual_grows,  # a choice: longer or shorter
    "kv_cache_numbers": question_kinds.kv_cache_numbers,  # a number within a tolerance
    "q_numbers": question_kinds.q_numbers,  # a number within a tolerance
    "masked_cells": question_kinds.masked_cells,  # a number, exact
}
ANSWER_TYPES = ("token", "block", "choice", "number")


class AnswerError(ValueError):
    """An answer of the wrong type for its question (a word for a number, a token the row cannot see)."""

    def __init__(self, message: str, expected: str, options: list[Any] | None = None) -> None:
        super().__init__(message)
        self.expected = expected  # the question's answer type
        self.options = options or []  # the values it takes (token positions, blocks, choices)


@dataclass(frozen=True)
class Verdict:
    """A checked answer: right or wrong, the student's answer (parsed), the right one, the value measured and
    the one line on why, in the question's language."""

    correct: bool
    given: Answer
    answer: Answer
    measured: Answer
    why: str


def ask(view: View, asked: Mapping[str, Any]) -> Question:
    """One question of a chapter (`{"id": ..., "kind": ..., **its words}`) measured on its view by its kind."""
    params = {k: v for k, v in asked.items() if k not in ("id", "kind")}
    kind = asked.get("kind")
    if kind not in QUESTION_KINDS:
        raise QuestionError(f"unknown question kind {kind!r}")
    return QUESTION_KINDS[kind](view, **params)


def _filled(values: Mapping[str, Any], words: Mapping[str, str]) -> dict[str, str]:
    filled = {key: shown(value) for key, value in values.items()}
    # a predicted token's leading space, shown as the page shows it (" Paris" as "␣Paris")
    filled.update({k: str(values[k]).replace(" ", "␣") for k in ("token", "final") if k in values})
    filled.update({k: f"{values[k]:,}" for k in ("numbers", "cells") if isinstance(values.get(k), int)})
    if "change" in values:  # a change in per cent, with its sign
        filled["change"] = f"{values['change']:+.1f}"
    return filled


def worded(question: Question, words: Mapping[str, str]) -> tuple[str, str]:
    """The question's prompt and its one-line why, from ui.question_<kind>[_why][_<pattern>] with its values."""
    filled = _filled(question.values, words)
    pattern = question.values.get("pattern")
    prompt = words.get(f"question_{question.kind}", "")
    why = words.get(f"question_{question.kind}_why_{pattern}") or words.get(f"question_{question.kind}_why", "")
    return prompt.format_map(filled), why.format_map(filled)


def _options(question: Question, words: Mapping[str, str]) -> list[dict[str, Any]]:
    """The options as the page offers them: tokens keep their text, blocks and choices are worded."""
    if question.answer_type == "token":
        return [dict(o) for o in question.options]
    return [{**o, "label": words.get(f"question_opt_{o['value']}", str(o["label"]))} for o in question.options]


def asked(view: View, questions: Iterable[Mapping[str, Any]], own: bool = True) -> list[dict[str, Any]]:
    """A chapter's questions asked on a view, worded in the view's language: {id, kind, answer_type, prompt,
    options, answer, accepted, tolerance, measured, why, values, defined}. On the chapter's own view every one
    must have a well-defined answer (else the QuestionError is raised: the chapter does not ship); on the class's
    own view one that has none there is `defined` false, with the reason, and no answer."""
    words = ui_words(view.lang)
    out: list[dict[str, Any]] = []
    for spec in questions:
        try:
            question = ask(view, spec)
        except ClaimError as error:  # a QuestionError, or a read-off the view lacks (a hybrid's DeltaNet layer)
            if own:
                raise
            out.append({"id": spec["id"], "kind": spec.get("kind"), "answer_type": None, "prompt": "",
                        "options": [], "answer": None, "accepted": [], "tolerance": 0, "measured": None, "why": "",
                        "values": {}, "defined": False, "reason": str(error)})
            continue
        prompt, why = worded(question, words)
        out.append({"id": spec["id"], "kind": question.kind, "answer_type": question.answer_type, "prompt": prompt,
                    "options": _options(question, words), "answer": question.answer,
                    "accepted": list(question.accepted), "tolerance": question.tolerance,
                    "measured": question.measured, "why": why, "values": question.values, "defined": True})
    return out


def parse_answer(question: Mapping[str, Any], raw: Any) -> Answer:
    """A student's answer as its question takes it (a token position, a block or "never", a choice, a finite
    number), from JSON or a query string; an AnswerError naming what the question takes otherwise."""
    kind = question.get("answer_type")
    # a token question takes any of a character's tokens (its option's `positions`), as the chart's row counts them
    values = [p for o in question.get("options", []) for p in o.get("positions", [o["value"]])]
    if kind == "number":
        try:
            number = float(raw)
        except (TypeError, ValueError):
            raise AnswerError("this question takes a number", "number") from None
        if isinstance(raw, bool) or not math.isfinite(number):
            raise AnswerError("this question takes a finite number", "number")
        return int(number) if number.is_integer() else number
    if kind in ("token", "block"):
        if raw == "never" and "never" in values:
            return "never"
        text = str(raw).strip()
        if isinstance(raw, bool) or not text.lstrip("-").isdigit() or int(text) not in values:
            what = "a token position the row can see" if kind == "token" else "a block number or \"never\""
            raise AnswerError(f"this question takes {what}: one of {', '.join(map(str, values))}", kind, values)
        return int(text)
    if kind == "choice":
        if raw not in values:
            raise AnswerError(f"this question takes one of: {', '.join(map(str, values))}", kind, values)
        return str(raw)
    raise AnswerError("this question has no well-defined answer on this sentence", "none")


def verdict(question: Mapping[str, Any], raw: Any) -> Verdict:
    """A student's answer to an asked question (one of asked()'s dicts): right when it is one of the accepted
    answers, or, for a number, within the tolerance of the measured count. Needs no model and no server state."""
    given = parse_answer(question, raw)
    if question["answer_type"] == "number":
        correct = abs(float(given) - float(question["answer"])) <= float(question["tolerance"])
    else:
        correct = given in question["accepted"]
    return Verdict(correct, given, question["answer"], question["measured"], question["why"])
