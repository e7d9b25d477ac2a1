"""GET /api/lessons and /api/lessons/{chapter}/claims: the lesson path, and what each chapter shows, measured."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from app.schemas import ERRORS, LessonClaimsOut
from app.service import ServiceDep
from lessons.languages import Lang

router = APIRouter(prefix="/api", tags=["lessons"])


@router.get("/lessons", response_model=list[dict[str, Any]])
async def list_chapters(service: ServiceDep) -> Any:
    """Every chapter in order: its stage and, per language, the model, sentence, layer and head it opens."""
    return service.lessons()


@router.get("/lessons/{chapter}/claims", response_model=LessonClaimsOut, responses={404: ERRORS[404]})
async def chapter_claims(
    chapter: str, service: ServiceDep, lang: Annotated[Lang, Query()] = "en",
    text: Annotated[str | None, Query(description="The sentence on screen (omitted: the chapter's).")] = None,
    target: Annotated[str | None, Query(description="An encoder-decoder's target on screen.")] = None,
    model: Annotated[str | None, Query(description="The model on screen (omitted: the chapter's).")] = None,
    layer: Annotated[int | None, Query(ge=0, description="The layer on screen (omitted: the chapter's).")] = None,
    head: Annotated[int | None, Query(ge=0, description="The head on screen (omitted: the chapter's).")] = None,
) -> Any:
    """What the chapter asks the class to look at, measured on its view: each claim, whether it holds, its
    values and the line the lesson bar prints (a chapter by id, "why", or number, "1"). Given the view on screen
    (text, model, layer, head), the claims its chart draws are measured again on it; lab claims, and those whose
    words that sentence lacks, are marked on_view false: they belong to the lesson's sentence."""
    screen = {"text": text, "target_text": target, "model": model, "layer": layer, "head": head}
    return await service.lesson_claims(chapter, lang, screen)  # the view as a request, then Service.run
