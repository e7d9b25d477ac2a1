"""The lesson path as data: app/lessons/chapters.json, read once and checked here.

The explorer page gets the same list rendered into it (templates/index.html, static/js/lessons.js), so the
chapters are written in one place. Each chapter opens one view per language; its claims are measured by
analysis/claims.py on that view's trace, or by lab/claims.py on a lab experiment's numbers
(app/answers/lesson_claims.py), and printed in the lesson bar.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from lab.claims import KINDS

LANGS = ("en", "zh")
ROOT = Path(__file__).resolve().parents[2]


class ChapterView(BaseModel):
    """What one language's chapter opens: a model, a sentence (and a translator's target), a layer and head."""

    model_config = ConfigDict(extra="forbid")
    model: str
    text: str
    target: str | None = None
    layer: int = Field(ge=0)
    head: int = Field(ge=0)
    claims: list[dict[str, Any]] = Field(min_length=1)

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
        return self.zh if lang == "zh" else self.en


class LessonPlan(BaseModel):
    about: str
    chapters: list[Chapter]


@lru_cache(maxsize=1)
def chapters() -> list[Chapter]:
    plan = LessonPlan.model_validate_json((Path(__file__).parent / "chapters.json").read_text(encoding="utf-8"))
    for chapter in plan.chapters:
        for view in (chapter.en, chapter.zh):
            unknown = [c.get("kind") for c in view.claims if c.get("kind") not in KINDS]
            if unknown:
                raise ValueError(f"chapter {chapter.id}: unknown claim kinds {unknown}")
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
        {**c.model_dump(exclude={"en", "zh"}),
         **{lang: {**c.in_lang(lang).model_dump(exclude={"claims"}), "arch": c.in_lang(lang).arch} for lang in LANGS}}
        for c in chapters()
    ]


@lru_cache(maxsize=len(LANGS))
def ui_words(lang: str) -> dict[str, str]:
    """The page's words in `lang` (static/text/<lang>.json `ui`): claim_<kind>, the sentence each claim kind
    prints, and pat_<pattern>, a head pattern's name."""
    words: dict[str, str] = json.loads((ROOT / "static" / "text" / f"{lang}.json").read_text(encoding="utf-8"))["ui"]
    return words
