"""The lesson path as data: lessons/chapters.json, read once and checked here.

The explorer page gets the same list rendered into it (templates/index.html, static/js/lessons.js), so the
chapters are written in one place. Each chapter opens one view per language (lessons/languages.py); its claims
name kinds of the one table (lessons/claims.py), are measured on that view's trace and printed in the lesson bar.
The loader returns facts (a model, a sentence, a layer, a head, claims as data); every word the page shows of a
chapter is in static/text/<lang>.json (lesson.<id>.*).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from lessons.claims import KINDS
from lessons.languages import LANGS
from lessons.questions import QUESTION_KINDS


class ChapterView(BaseModel):
    """What one language's chapter opens: a model, a sentence (and a translator's target), a layer and head."""

    model_config = ConfigDict(extra="forbid")
    model: str
    text: str
    target: str | None = None
    layer: int = Field(ge=0)
    head: int = Field(ge=0)
    claims: list[dict[str, Any]] = Field(min_length=1)
    # what the class predicts before the chart is shown (lessons/questions.py): {id, kind, **its words}
    questions: list[dict[str, Any]] = Field(min_length=1)

    @property
    def arch(self) -> str:
        """The architecture a page falls back to when the server lacks this model."""
        return "encoder-decoder" if self.target is not None else "decoder"


class Chapter(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    stage: str
    view: Literal["head", "heads"]
    iv: str | None = None
    sheet: Literal["params", "arch"] | None = None
    en: ChapterView
    zh: ChapterView

    def in_lang(self, lang: str) -> ChapterView:
        """The view the chapter opens in `lang` (one of LANGS)."""
        if lang not in LANGS:
            raise ValueError(f"no view in {lang!r}: the chapters are written in {', '.join(LANGS)}")
        view: ChapterView = getattr(self, lang)
        return view


class LessonPlan(BaseModel):
    about: str
    chapters: list[Chapter]


@lru_cache(maxsize=1)
def chapters() -> list[Chapter]:
    plan = LessonPlan.model_validate_json((Path(__file__).parent / "chapters.json").read_text(encoding="utf-8"))
    for chapter in plan.chapters:
        for view in (chapter.in_lang(lang) for lang in LANGS):
            unknown = [c.get("kind") for c in view.claims if c.get("kind") not in KINDS]
            if unknown:
                raise ValueError(f"chapter {chapter.id}: unknown claim kinds {unknown}")
            unknown = [q.get("kind") for q in view.questions if q.get("kind") not in QUESTION_KINDS]
            if unknown:
                raise ValueError(f"chapter {chapter.id}: unknown question kinds {unknown}")
        # a question's id names it in every language (a class of EN and ZH pages answers the same question)
        ids = [[q.get("id") for q in chapter.in_lang(lang).questions] for lang in LANGS]
        if any(i != ids[0] for i in ids) or len(set(ids[0])) != len(ids[0]) or None in ids[0]:
            raise ValueError(f"chapter {chapter.id}: question ids must be unique and the same in every language")
    return plan.chapters


def find(chapter_id: str) -> tuple[int, Chapter] | None:
    """A chapter by id ("why") or by its number as the lesson bar shows it, from 1 ("1")."""
    listed = chapters()
    if chapter_id.isdigit() and 1 <= int(chapter_id) <= len(listed):
        return int(chapter_id) - 1, listed[int(chapter_id) - 1]
    return next(((i, c) for i, c in enumerate(listed) if c.id == chapter_id), None)


def for_page() -> list[dict[str, Any]]:
    """The chapters as the explorer page reads them (static/js/lessons.js): every field, plus each view's
    fallback architecture."""
    return [
        {**c.model_dump(exclude=set(LANGS)),
         **{lang: {**c.in_lang(lang).model_dump(exclude={"claims", "questions"}), "arch": c.in_lang(lang).arch}
            for lang in LANGS}}
        for c in chapters()
    ]
