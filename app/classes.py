"""A class session in the web app (issue 42): the one object between the class routes and classroom/.

Each method is one route's call: it reads who is asking (the teacher's key or a student's token, from the
class's cookie or the X-Class-Key header), calls classroom.Classroom once (a committed transaction) and
makes the HTTP answer (JSON, a cookie, a CSV, a QR code, or a live event stream). Cookies are HttpOnly,
SameSite=Strict and scoped to the class's own API path, so a page of one class never sends another's secret.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from sqlalchemy.exc import OperationalError

from app.class_questions import LessonQuestions, asked_question
from app.errors import ApiError
from app.qr_code import qr_svg
from app.service import Service
from app.settings import Settings
from classroom import database
from classroom.errors import ClassError
from classroom.live import Watcher
from classroom.rules import code_from
from classroom.service import Classroom, Limits

TEACHER_COOKIE, STUDENT_COOKIE, KEY_HEADER = "te_teacher", "te_student", "x-class-key"


def open_classroom(settings: Settings) -> Classroom:
    """The database of the settings, migrated to the newest (once, whichever replica starts first)."""
    engine = database.make_engine(database.database_url(settings.database_url, settings.data_dir))
    database.upgrade(engine)
    limits = Limits(students=settings.class_max_students, answers=settings.class_max_answers,
                    classes=settings.max_classes, ttl_s=settings.class_ttl_s)
    return Classroom(engine, LessonQuestions(), limits)


def class_error(error: ClassError) -> ApiError:
    return ApiError(error.status, error.code, error.message).with_details(error.code, **error.values)


def database_down() -> ApiError:
    return ApiError(503, "database_unavailable", "The class's database cannot be reached right now; your answers "
                                                 "so far are kept. Try again in a moment.")


class ClassSessions:
    def __init__(self, classroom: Classroom, streams: int, lessons: Service) -> None:
        self.classroom = classroom
        self.lessons = lessons  # the explorer's service: a question asked is measured as the lessons endpoint does
        # a class's streams: its students' and a few teacher screens; the process's: the settings'
        self.watcher = Watcher(classroom.versions, per_class=classroom.limits.students + 8, per_process=streams)

    # ------------------------------------------------------------ who is asking

    @staticmethod
    def _client(request: Request) -> str:
        return request.client.host if request.client else "unknown"

    @staticmethod
    def _secret(request: Request, cookie: str) -> str | None:
        return request.headers.get(KEY_HEADER) or request.cookies.get(cookie)

    def _call(self, request: Request, action: Any, *args: Any, guard: bool = True) -> Any:
        """`guard=False`: the action checks the client's failed codes itself (an answer, in its group's
        transaction); a failed code is counted here all the same."""
        try:
            with self.classroom.guarded(self._client(request), check=guard):
                return action(*args)
        except ClassError as error:
            raise class_error(error) from None
        except OperationalError:
            raise database_down() from None

    @staticmethod
    def _cookie(response: Response, request: Request, name: str, code: str, value: str, max_age: int) -> None:
        response.set_cookie(name, value, max_age=max_age, path=f"/api/classes/{code}", httponly=True,
                            samesite="strict", secure=request.url.scheme == "https")

    @staticmethod
    def _links(request: Request, code: str) -> dict[str, str]:
        base = str(request.base_url).rstrip("/")
        return {"join_url": f"{base}/class?code={code}", "teacher_url": f"{base}/class/teach?code={code}"}

    # ------------------------------------------------------------ the teacher

    def start(self, request: Request, lang: str) -> Response:
        started = self._call(request, self.classroom.start, self._client(request), lang)
        links = self._links(request, started.code)
        body = {"code": started.code, "teacher_key": started.teacher_key, **links,
                "teacher_link": f"{links['teacher_url']}#key={started.teacher_key}",
                "expires_at": started.expires_at.isoformat()}
        response = JSONResponse(body, status_code=201)
        self._cookie(response, request, TEACHER_COOKIE, started.code, started.teacher_key, self.classroom.limits.ttl_s)
        return response

    def claim(self, request: Request, code: str) -> Response:
        """The teacher's link opened on another screen: its key (header) checked, then kept as the cookie."""
        key = request.headers.get(KEY_HEADER)
        found = self._call(request, self.classroom.check_teacher, code, key)
        response = JSONResponse({"code": found, **self._links(request, found)})
        self._cookie(response, request, TEACHER_COOKIE, found, key or "", self.classroom.limits.ttl_s)
        return response

    def teacher_view(self, request: Request, code: str) -> dict[str, Any]:
        view: dict[str, Any] = self._call(request, self.classroom.teacher_view, code,
                                          self._secret(request, TEACHER_COOKIE))
        return {**view, **self._links(request, view["code"])}

    async def step(self, request: Request, code: str, chapter: str, question: str) -> dict[str, Any]:
        """The teacher asks a chapter's question: measured by the lessons on the chapter's view in the class's
        language (a forward pass, in the inference pool), then stored with the class, which every page follows."""
        key = self._secret(request, TEACHER_COOKIE)
        lang = await asyncio.to_thread(self._call, request, self.classroom.lang_of, code, key)
        asked = await asked_question(self.lessons, chapter, lang, question)
        return dict(await asyncio.to_thread(self._call, request, self.classroom.step, code, key, chapter, question,
                                            asked))

    def reveal(self, request: Request, code: str) -> dict[str, Any]:
        return dict(self._call(request, self.classroom.reveal, code, self._secret(request, TEACHER_COOKIE)))

    def end(self, request: Request, code: str) -> Response:
        self._call(request, self.classroom.end, code, self._secret(request, TEACHER_COOKIE))
        response = Response(status_code=204)
        response.delete_cookie(TEACHER_COOKIE, path=f"/api/classes/{code_from(code)}")
        return response

    def answers_csv(self, request: Request, code: str) -> Response:
        text = self._call(request, self.classroom.answers_csv, code, self._secret(request, TEACHER_COOKIE))
        name = f"class-{code_from(code)}-answers.csv"
        return Response(text.encode("utf-8-sig"), media_type="text/csv; charset=utf-8",  # the BOM: Excel reads UTF-8
                        headers={"Content-Disposition": f'attachment; filename="{name}"', "Cache-Control": "no-store"})

    def qr(self, request: Request, code: str) -> Response:
        """The join link as a QR code for the projector: teacher only, so it is no oracle of running codes."""
        found = self._call(request, self.classroom.check_teacher, code, self._secret(request, TEACHER_COOKIE))
        return Response(qr_svg(self._links(request, found)["join_url"], scale=8), media_type="image/svg+xml",
                        headers={"Cache-Control": "no-store"})

    # ------------------------------------------------------------ a student

    def join(self, request: Request, code: str, nickname: str) -> Response:
        joined = self._call(request, self.classroom.join, self._client(request), code, nickname)
        response = JSONResponse({"code": joined.code, "nickname": joined.nickname, "token": joined.token},
                                status_code=201)
        self._cookie(response, request, STUDENT_COOKIE, joined.code, joined.token, self.classroom.limits.ttl_s)
        return response

    def answer(self, request: Request, code: str, value: str) -> dict[str, Any]:
        return dict(self._call(request, self.classroom.answer, code, self._secret(request, STUDENT_COOKIE), value,
                               self._client(request), guard=False))

    def student_view(self, request: Request, code: str) -> dict[str, Any]:
        return dict(self._call(request, self.classroom.student_view, code, self._secret(request, STUDENT_COOKIE)))

    # ------------------------------------------------------------ live

    async def events(self, request: Request, code: str, teacher: bool) -> StreamingResponse:
        """Server-sent events of the class (classroom/live.py): the caller checked once (in a thread), then the
        stream waits on the event loop, holding no thread, and the process's poller reads the version."""
        check, cookie = ((self.classroom.check_teacher, TEACHER_COOKIE) if teacher
                         else (self.classroom.check_student, STUDENT_COOKIE))
        found = await asyncio.to_thread(self._call, request, check, code, self._secret(request, cookie))
        try:
            self.watcher.open(found)
        except ClassError as error:
            raise class_error(error) from None

        def view() -> dict[str, Any]:
            return self.classroom.live_view(found, teacher)

        return StreamingResponse(self.watcher.stream(found, teacher, view), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})


async def get_classes(request: Request) -> ClassSessions:
    """async: no thread hop to hand the object over (the routes themselves run in the thread pool)."""
    sessions: ClassSessions = request.app.state.classes
    return sessions


ClassesDep = Annotated[ClassSessions, Depends(get_classes)]
