"""The lesson path: GET /api/lessons/{chapter}/claims, what a chapter asks the class to look at, measured."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from app.schemas.inputs import TextInput


class LessonView(TextInput):
    """A chapter's view in one language, as the service runs it: its model, sentence (and target), from the
    chapter itself (app/lessons/chapters.json), never from the client."""

    chapter: str = Field(description="The chapter's id.")
    lang: str



class ClaimOut(BaseModel):
    kind: str = Field(description="What is measured (lessons/claims.py KINDS: the trace's and the lab's).")
    holds: bool = Field(description="Whether the chapter's claim is true on this view's numbers.")
    values: dict[str, Any] = Field(description="What was measured, by name (weights, counts, tokens).")
    line: str = Field(description="The sentence the lesson bar prints, in the asked language, with those values.")


class LessonClaimsOut(BaseModel):
    chapter: str
    number: int = Field(description="Its place on the lesson path, from 1.")
    lang: str
    model: str
    text: str
    target: str | None
    stage: str
    layer: int
    head: int
    claims: list[ClaimOut]
