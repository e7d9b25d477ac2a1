"""A class session (issue 42): the teacher starts a class, students join with a nickname, the teacher moves the
class to a question and reveals it, everyone's page follows live. Each handler: parse -> one call of
app.classes.ClassSessions (the class service) -> respond. Teacher routes need the class's teacher key (cookie or
X-Class-Key)."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import Response, StreamingResponse
from pydantic import BaseModel, Field

from app.classes import ClassesDep
from app.schemas import ErrorOut
from lessons.languages import Lang

router = APIRouter(prefix="/api/classes", tags=["classes"])
CLASS_ERRORS: dict[int | str, dict[str, Any]] = {
    403: {"model": ErrorOut, "description": "Not this class's teacher (or not one of its students)"},
    404: {"model": ErrorOut, "description": "No running class has this code (never, ended or expired)"},
    409: {"model": ErrorOut, "description": "A limit of the class or the server, or a question closed"},
    422: {"model": ErrorOut, "description": "A nickname or an answer refused, an unknown question"},
    429: {"model": ErrorOut, "description": "Too many tries from this client: wait the seconds said"},
}


class StartIn(BaseModel):
    lang: Lang = "en"


class JoinIn(BaseModel):
    nickname: str = Field(description="What the class sees of the student: 1 to 24 characters, no markup.")


class StepIn(BaseModel):
    chapter: str = Field(description="A chapter's id or number (GET /api/lessons).")
    question: str = Field(description="One of the chapter's question ids.")


class AnswerIn(BaseModel):
    value: str = Field(description="The answer: a token, a block, a sign or a number, as text (at most 64).")


@router.post("", status_code=201, responses=CLASS_ERRORS)
def start_class(body: StartIn, request: Request, service: ClassesDep) -> Response:
    """Start a class: its code, the join link, and the teacher's key (also set as the teacher's cookie)."""
    return service.start(request, body.lang)


@router.post("/{code}/teacher", responses=CLASS_ERRORS)
def claim_class(code: str, request: Request, service: ClassesDep) -> Response:
    """The teacher's link opened on another screen: the key (X-Class-Key) becomes this browser's cookie."""
    return service.claim(request, code)


@router.get("/{code}", responses=CLASS_ERRORS)
def teacher_view(code: str, request: Request, service: ClassesDep) -> dict[str, Any]:
    """The teacher's view: where the class is, how many answered, the distribution of answers (no names)."""
    return service.teacher_view(request, code)


@router.post("/{code}/step", responses=CLASS_ERRORS)
async def step_class(code: str, body: StepIn, request: Request, service: ClassesDep) -> dict[str, Any]:
    """Move the class to a chapter's question (GET /api/lessons/{chapter}/questions), asked on the chapter's view
    in the class's language: every student's page follows."""
    return await service.step(request, code, body.chapter, body.question)


@router.post("/{code}/reveal", responses=CLASS_ERRORS)
def reveal_answer(code: str, request: Request, service: ClassesDep) -> dict[str, Any]:
    """Reveal the question's answer and the class's distribution on every page."""
    return service.reveal(request, code)


@router.get("/{code}/answers.csv", responses=CLASS_ERRORS, response_class=Response)
def answers_csv(code: str, request: Request, service: ClassesDep) -> Response:
    """Every answer of the class with its student's nickname, as CSV (the teacher's copy)."""
    return service.answers_csv(request, code)


@router.get("/{code}/qr.svg", responses=CLASS_ERRORS, response_class=Response)
def join_qr(code: str, request: Request, service: ClassesDep) -> Response:
    """The join link as a QR code (SVG, drawn on this server) for the projector."""
    return service.qr(request, code)


# POST /end, not DELETE on the class's path: one method per path, so a 405 lists exactly the methods it has
@router.post("/{code}/end", status_code=204, responses=CLASS_ERRORS, response_class=Response)
def end_class(code: str, request: Request, service: ClassesDep) -> Response:
    """End the class: its students and answers are deleted."""
    return service.end(request, code)


@router.post("/{code}/students", status_code=201, responses=CLASS_ERRORS)
def join_class(code: str, body: JoinIn, request: Request, service: ClassesDep) -> Response:
    """Join a class with a nickname only: the student's token comes back (and as the student's cookie)."""
    return service.join(request, code, body.nickname)


@router.get("/{code}/me", responses=CLASS_ERRORS)
def student_view(code: str, request: Request, service: ClassesDep) -> dict[str, Any]:
    """A student's view: the question asked now, their own answer, and after the reveal the distribution."""
    return service.student_view(request, code)


@router.post("/{code}/answers", responses=CLASS_ERRORS)
def answer_question(code: str, body: AnswerIn, request: Request, service: ClassesDep) -> dict[str, Any]:
    """Answer the question asked now (again, to change it, until the reveal); stored before this returns."""
    return service.answer(request, code, body.value)


@router.get("/{code}/events", responses=CLASS_ERRORS, response_class=StreamingResponse)
async def class_events(code: str, request: Request, service: ClassesDep,
                       role: Literal["student", "teacher"] = "student") -> StreamingResponse:
    """Server-sent events (text/event-stream): `state` whenever the class changes, `ended` when it ends."""
    return await service.events(request, code, role == "teacher")
