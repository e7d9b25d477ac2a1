"""The lesson path: GET /api/lessons/{chapter}/claims, what a chapter asks the class to look at, measured."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from app.schemas.inputs import TextInput


class LessonView(TextInput):
    """A chapter's view in one language, as the service runs it: its model, sentence (and target), layer and
    head, from the chapter itself (lessons/chapters.json), or the view on screen where the page names one."""

    chapter: str = Field(description="The chapter's id.")
    lang: str
    layer: int = Field(ge=0, description="The layer on screen.")
    head: int = Field(ge=0, description="The head on screen.")
    own: bool = Field(True, description="Whether this is the chapter's own view (else the class's own).")



class ClaimOut(BaseModel):
    kind: str = Field(description="What is measured (lessons/claims.py KINDS: the trace's and the lab's).")
    holds: bool = Field(description="Whether the chapter's claim is true on this view's numbers.")
    values: dict[str, Any] = Field(description="What was measured, by name (weights, counts, tokens).")
    line: str = Field(description="The sentence the lesson bar prints, in the asked language, with those values "
                                  "(empty for a claim not measured on the view asked: on_view false).")
    panel: str | None = Field(description="The lab panel that draws its numbers (\"measured in the lab\"), or null: "
                                          "they are on the explorer's chart of the chapter.")
    on_view: bool = Field(description="Measured on the view asked. False on the class's own view for a lab claim, "
                                      "or one whose words that sentence lacks: it belongs to the lesson's sentence.")


class LessonClaimsOut(BaseModel):
    chapter: str
    own: bool = Field(description="Measured on the chapter's own view (model, sentence, layer, head).")
    number: int = Field(description="Its place on the lesson path, from 1.")
    lang: str
    model: str
    text: str
    target: str | None
    stage: str
    layer: int
    head: int
    claims: list[ClaimOut]


class LessonQuestionsView(LessonView):
    """A chapter's view, and optionally one of its questions and a student's answer to check on it."""

    question: str | None = Field(None, description="One question's id (omitted: every question of the chapter).")
    answer: str | None = Field(None, description="A student's answer to `question`, checked on the view's numbers.")


Answer = int | float | str


class QuestionOut(BaseModel):
    id: str = Field(description="The question's id, the same in every language (lessons/chapters.json).")
    kind: str = Field(description="What is asked (lessons/questions.py QUESTION_KINDS).")
    answer_type: str | None = Field(description="token (a position), block (a block or \"never\"), choice, number; "
                                                "null when the question has no well-defined answer here.")
    prompt: str = Field(description="The question, in the asked language, worded with this view's numbers.")
    options: list[dict[str, Any]] = Field(description="What the page offers: {value, label} (a token's `word` too).")
    answer: Answer | None = Field(description="The right answer, measured on this view.")
    accepted: list[Answer] = Field(description="The answers that count as right (a character's byte tokens).")
    tolerance: float = Field(description="A number's: right within answer ± tolerance.")
    measured: Answer | None = Field(description="The value the reveal shows (a weight, a count, a block).")
    why: str = Field(description="The one line the reveal prints, with the measured values.")
    values: dict[str, Any] = Field(description="What was measured, by name.")
    defined: bool = Field(description="Whether the question has a well-defined answer on this view (false on the "
                                      "class's own sentence where it has none: no answer, and `reason`).")
    reason: str | None = Field(None, description="Why it has no well-defined answer here.")


class VerdictOut(BaseModel):
    question: str
    correct: bool
    given: Answer
    answer: Answer
    measured: Answer
    why: str


class LessonQuestionsOut(BaseModel):
    chapter: str
    own: bool = Field(description="Asked on the chapter's own view (model, sentence, layer, head).")
    number: int
    lang: str
    model: str
    text: str
    target: str | None
    stage: str
    layer: int
    head: int
    questions: list[QuestionOut]
    verdict: VerdictOut | None = Field(None, description="The answer given, checked (with `question` and `answer`).")
