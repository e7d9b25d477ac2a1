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


class LessonShareOut(BaseModel):
    chapter: str
    number: int = Field(description="Its place on the lesson path, from 1.")
    lang: str
    link: str = Field(description="The chapter's link on this server, in that language (from the address asked).")
    svg: str = Field(description="The link as a QR code, an SVG drawn on this server (no QR service is asked).")
