"""GET /api/lessons/{chapter}/questions: what a chapter asks the class to predict, answered on its view.

The same request as the claims' (app/answers/lesson_claims.py: the chapter's view in the page's language, or the
view on screen), plus, optionally, one question's id and a student's answer to check. The build turns the text's
forward pass into a lessons.view.View and returns lessons.chapter_questions: each question with its prompt,
options, right answer, tolerance, measured value and one-line why, so a page alone checks an answer with no
server state; with `question` and `answer`, that answer's verdict too. The teaching logic lives in lessons/.
"""

from __future__ import annotations

from typing import Any

from app import errors
from app.answers.lesson_claims import answered, checked, on_screen
from app.pipeline import Build, Context, Endpoint, Run
from app.schemas import LessonQuestionsOut, LessonQuestionsView, LessonView
from lessons.chapter_questions import UnknownQuestion, question_for, question_ids, questions_for
from lessons.questions import AnswerError, verdict
from lessons.view import ClaimError


def questions_request(view: LessonView, question: str | None, answer: str | None) -> LessonQuestionsView:
    """The chapter's view (lesson_claims.view_request) with the question asked and the answer to check: 404 for a
    question the chapter has not, 422 for an answer without its question."""
    if question is not None and question not in question_ids(view.chapter):
        raise errors.unknown_question(view.chapter, question_ids(view.chapter))
    if answer is not None and question is None:
        raise errors.invalid_answer("name the question it answers (question=...)", "question",
                                    question_ids(view.chapter))
    return LessonQuestionsView.model_validate({**view.model_dump(), "question": question, "answer": answer})


def plan(context: Context, request: LessonQuestionsView) -> Build:
    number, chapter = checked(context, request)

    def build(run: Run) -> dict[str, Any]:
        view = on_screen(run, request)
        try:
            if request.question is None:
                questions = questions_for(chapter.id, view, own=request.own)
            else:
                questions = [question_for(chapter.id, request.question, view, own=request.own)]
        except UnknownQuestion as error:  # questions_request checked it
            raise errors.unknown_question(chapter.id, error.known) from error
        except ClaimError as error:  # the chapter's own sentence: a question without an answer does not ship
            raise errors.not_in_model(f"Chapter {chapter.id}: {error}.") from error
        out = answered(number, chapter, request, context.model.name) | {"questions": questions, "verdict": None}
        if request.answer is not None:
            try:
                checked_answer = verdict(questions[0], request.answer)
            except AnswerError as error:
                raise errors.invalid_answer(str(error), error.expected, error.options) from error
            out["verdict"] = {"question": request.question, "correct": checked_answer.correct,
                              "given": checked_answer.given, "answer": checked_answer.answer,
                              "measured": checked_answer.measured, "why": checked_answer.why}
        return out

    return build


LESSON_QUESTIONS = Endpoint(
    name="chapter_questions", method="GET", route="/api/lessons/{chapter}/questions", tag="lessons",
    request=LessonQuestionsView, response=LessonQuestionsOut, plan=plan,
    summary="What the chapter asks the class to predict before its chart is shown, answered on its view: each\n"
            "question's prompt, answer type (token, block, choice, number), options, right answer, tolerance,\n"
            "measured value and one-line why. Given the view on screen (text, model, layer, head), asked again on\n"
            "it (a question without a well-defined answer there: defined false). With question and answer: that\n"
            "answer checked (verdict).")
