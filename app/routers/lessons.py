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
async def chapter_claims(chapter: str, service: ServiceDep, lang: Annotated[Lang, Query()] = "en") -> Any:
    """What the chapter asks the class to look at, measured on its view: each claim, whether it holds, its
    values and the line the lesson bar prints (a chapter by id, "why", or number, "1")."""
    return await service.lesson_claims(chapter, lang)  # its view as a request, then Service.run
