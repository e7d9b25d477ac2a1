"""A chapter's questions by chapter and id: what GET /api/lessons/{chapter}/questions answers, and what a class
server calls to check a student's answer on the view the class is looking at.

    questions_for(chapter, view, own=True) -> list[dict]    the chapter's questions asked on `view`
    question_for(chapter, question_id, view, own=True) -> dict   one of them (UnknownQuestion if none has that id)
    check(chapter, question_id, view, answer, own=True) -> Verdict   a student's answer, checked on `view`

`chapter` is a chapter's id ("why") or its number from 1 ("1"); `view` a lessons.view.View (its `lang` picks the
chapter's questions in that language: their ids are the same in every language). A class server that keeps an
asked question (one of questions_for's dicts) checks later answers with lessons.questions.verdict(question,
answer), with no model.
"""

from __future__ import annotations

from typing import Any

from lessons import chapters as lesson_path
from lessons.questions import Verdict, asked, verdict
from lessons.view import View


class UnknownChapter(LookupError):
    """No chapter has that id or number."""


class UnknownQuestion(LookupError):
    """The chapter has no question with that id (`known`: the ids it has)."""

    def __init__(self, chapter: str, question_id: str, known: list[str]) -> None:
        super().__init__(f"chapter {chapter} has no question {question_id!r}; its questions: {', '.join(known)}")
        self.known = known


def _chapter_questions(chapter: str, lang: str) -> tuple[str, list[dict[str, Any]]]:
    found = lesson_path.find(chapter)
    if found is None:
        raise UnknownChapter(f"there is no chapter {chapter!r}")
    return found[1].id, found[1].in_lang(lang).questions


def question_ids(chapter: str) -> list[str]:
    """The ids of a chapter's questions, in order (the same in every language)."""
    return [str(q["id"]) for q in _chapter_questions(chapter, "en")[1]]


def questions_for(chapter: str, view: View, own: bool = True) -> list[dict[str, Any]]:
    """The chapter's questions asked on `view` (lessons.questions.asked): each with its prompt, options, right
    answer, tolerance, measured value and one-line why in the view's language; on the class's own view
    (own=False) one without a well-defined answer there is `defined` false."""
    return asked(view, _chapter_questions(chapter, view.lang)[1], own=own)


def question_for(chapter: str, question_id: str, view: View, own: bool = True) -> dict[str, Any]:
    """One question of the chapter, asked on `view`; UnknownQuestion when it has none with that id."""
    chapter_id, specs = _chapter_questions(chapter, view.lang)
    spec = next((q for q in specs if q["id"] == question_id), None)
    if spec is None:
        raise UnknownQuestion(chapter_id, question_id, [str(q["id"]) for q in specs])
    return asked(view, [spec], own=own)[0]


def check(chapter: str, question_id: str, view: View, answer: Any, own: bool = True) -> Verdict:
    """A student's answer to one question of the chapter, checked on `view`'s numbers: Verdict(correct, given,
    answer, measured, why). lessons.questions.AnswerError for an answer of the wrong type."""
    return verdict(question_for(chapter, question_id, view, own=own), answer)
