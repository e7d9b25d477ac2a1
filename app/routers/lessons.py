"""GET /api/lessons, /api/lessons/{chapter}/claims and /questions: the lesson path, what each chapter shows,
measured, and what it asks the class to predict, answered on the numbers."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from app.endpoints import LESSON_CLAIMS, LESSON_QUESTIONS
from app.schemas import ERRORS, LessonClaimsOut, LessonQuestionsOut
from app.service import ServiceDep
from lessons.languages import Lang

router = APIRouter(prefix="/api", tags=["lessons"])


@router.get("/lessons", response_model=list[dict[str, Any]])
async def list_chapters(service: ServiceDep) -> Any:
    """Every chapter in order: its stage and, per language, the model, sentence, layer and head it opens."""
    return service.lessons()


# its request is made from the chapter and the view on screen (Service.lesson_claims), so its route is written out;
# its name and description are its record's
@router.get("/lessons/{chapter}/claims", response_model=LessonClaimsOut, responses={404: ERRORS[404]},
            name=LESSON_CLAIMS.name, description=LESSON_CLAIMS.summary)
async def chapter_claims(
    chapter: str, service: ServiceDep, lang: Annotated[Lang, Query()] = "en",
    text: Annotated[str | None, Query(description="The sentence on screen (omitted: the chapter's).")] = None,
    target: Annotated[str | None, Query(description="An encoder-decoder's target on screen.")] = None,
    model: Annotated[str | None, Query(description="The model on screen (omitted: the chapter's).")] = None,
    layer: Annotated[int | None, Query(ge=0, description="The layer on screen (omitted: the chapter's).")] = None,
    head: Annotated[int | None, Query(ge=0, description="The head on screen (omitted: the chapter's).")] = None,
) -> Any:
    return await service.lesson_claims(chapter, lang, {"text": text, "target_text": target, "model": model,
                                                       "layer": layer, "head": head})


# the same view parameters as the claims', plus one question's id and an answer to check
@router.get("/lessons/{chapter}/questions", response_model=LessonQuestionsOut, responses={404: ERRORS[404]},
            name=LESSON_QUESTIONS.name, description=LESSON_QUESTIONS.summary)
async def chapter_questions(
    chapter: str, service: ServiceDep, lang: Annotated[Lang, Query()] = "en",
    text: Annotated[str | None, Query(description="The sentence on screen (omitted: the chapter's).")] = None,
    target: Annotated[str | None, Query(description="An encoder-decoder's target on screen.")] = None,
    model: Annotated[str | None, Query(description="The model on screen (omitted: the chapter's).")] = None,
    layer: Annotated[int | None, Query(ge=0, description="The layer on screen (omitted: the chapter's).")] = None,
    head: Annotated[int | None, Query(ge=0, description="The head on screen (omitted: the chapter's).")] = None,
    question: Annotated[str | None, Query(max_length=64, description="One question's id (omitted: all).")] = None,
    answer: Annotated[str | None, Query(max_length=64, description="An answer to `question`, to check.")] = None,
) -> Any:
    return await service.lesson_questions(chapter, lang, {"text": text, "target_text": target, "model": model,
                                                          "layer": layer, "head": head}, question, answer)
