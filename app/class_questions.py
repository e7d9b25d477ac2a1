"""The lessons' questions as a class asks them: the question measured on its chapter's view in the class's
language when the teacher asks it (GET /api/lessons/{chapter}/questions' own computation, through the Service),
and each answer checked on it by lessons.questions.verdict, with no model (classroom.service.Questions)."""

from __future__ import annotations

import gzip
import json
from typing import Any

from app.errors import ApiError
from app.service import Service
from classroom.errors import ClassError
from lessons.questions import AnswerError, verdict


class LessonQuestions:
    def check(self, asked: dict[str, Any], value: str) -> tuple[str, bool | None]:
        try:
            checked = verdict(asked, value)
        except AnswerError as error:
            raise ClassError(422, "invalid_answer", f"This answer does not fit the question: {error}.",
                             expected=error.expected) from None
        return str(checked.given), checked.correct


async def asked_question(service: Service, chapter: str, lang: str, question: str) -> dict[str, Any]:
    """One question of a chapter, asked on the chapter's own view in `lang` (its model, sentence, layer, head),
    as the lesson's endpoint answers it; its refusals (unknown chapter or question, a model not offered) are the
    endpoint's own."""
    response = await service.lesson_questions(chapter, lang, None, question)
    body = bytes(response.body)
    if response.headers.get("content-encoding") == "gzip":
        body = gzip.decompress(body)
    questions = json.loads(body)["questions"]
    if not questions or not questions[0].get("defined", True):
        raise ApiError(422, "invalid_question", "This question has no well-defined answer on the chapter's view.")
    found: dict[str, Any] = questions[0]
    return found
