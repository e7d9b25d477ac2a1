"""classroom.Classroom on a real database (SQLite, and PostgreSQL where installed): a whole class, its limits,
its secrets, expiry, and 60 answers at once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import func, select

from classroom import database, rules
from classroom.errors import ClassError
from classroom.models import AnswerRow, ClassRow, StudentRow
from classroom.service import Classroom, Limits


class Questions:
    """Every question's right answer is its `answer`; "?" is an answer no question takes."""

    def check(self, asked: dict[str, Any], value: str) -> tuple[str, bool | None]:
        if value == "?":
            raise ClassError(422, "invalid_answer", "not an answer")
        return value, value == asked["answer"]


ASKED = {"id": "q1", "kind": "k", "answer_type": "token", "prompt": "Which?", "options": [], "tolerance": 0,
         "answer": "it", "accepted": ["it"], "measured": "it", "why": "because"}


def step(room: Classroom, code: str, key: str | None, question: str = "q1") -> dict[str, Any]:
    return room.step(code, key, "c", question, {**ASKED, "id": question})


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, 9, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture()
def clock() -> Clock:
    return Clock()


@pytest.fixture()
def room(database_url: str, clock: Clock) -> Iterator[Classroom]:
    engine = database.make_engine(database_url)
    database.upgrade(engine)
    yield Classroom(engine, Questions(), Limits(students=5, answers=2, classes=3, ttl_s=3600, joins=20,
                                                failed_codes=3, starts=50), clock=clock)
    engine.dispose()


def counts(room: Classroom) -> tuple[int, int, int]:
    with room.session() as db:
        return tuple(db.scalar(select(func.count()).select_from(table)) or 0  # type: ignore[return-value]
                     for table in (ClassRow, StudentRow, AnswerRow))


def refused(code: str, call: object, *args: object) -> ClassError:
    with pytest.raises(ClassError) as caught:
        call(*args)  # type: ignore[operator]
    assert caught.value.code == code, caught.value.message
    return caught.value


def test_a_whole_class(room: Classroom) -> None:
    started = room.start("teacher", "en")
    assert rules.code_from(started.code) == started.code and len(started.teacher_key) >= 32
    ana = room.join("a", started.code.lower(), "  Ana ")  # the code's case and the nickname's spaces forgiven
    ana2 = room.join("b", started.code, "Ana")
    bo = room.join("c", started.code, "Bo")
    assert (ana.nickname, ana2.nickname, bo.nickname) == ("Ana", "Ana (2)", "Bo")
    refused("no_question", room.answer, started.code, ana.token, "it")
    refused("invalid_question", room.step, started.code, started.teacher_key, "c", "q 9", ASKED)
    view = step(room, started.code, started.teacher_key)
    assert (view["chapter"], view["question"], view["students"], view["answered"]) == ("c", "q1", 3, 0)
    assert view["asked"]["prompt"] == "Which?" and "answer" not in view["asked"]  # not before the reveal
    refused("invalid_answer", room.answer, started.code, ana.token, "?")
    room.answer(started.code, ana.token, "the")
    room.answer(started.code, ana.token, "it")  # changed before the reveal: still one answer
    room.answer(started.code, ana2.token, "it")
    room.answer(started.code, bo.token, "street")
    teacher = room.teacher_view(started.code, started.teacher_key)
    assert teacher["answered"] == 3
    assert [(b["value"], b["count"], b["correct"]) for b in teacher["distribution"]] == [("it", 2, None),
                                                                                         ("street", 1, None)]
    student = room.student_view(started.code, bo.token)
    assert "distribution" not in student and student["mine"] == {"value": "street", "correct": None}
    room.reveal(started.code, started.teacher_key)
    student = room.student_view(started.code, bo.token)
    assert student["mine"] == {"value": "street", "correct": False}
    assert (student["asked"]["answer"], student["asked"]["why"]) == ("it", "because")
    assert [(b["value"], b["correct"]) for b in student["distribution"]] == [("it", True), ("street", False)]
    refused("already_revealed", room.answer, started.code, bo.token, "it")
    lines = room.answers_csv(started.code, started.teacher_key).splitlines()
    assert lines[0] == '"nickname","chapter","question","answer","correct","answered_at"'
    assert sorted(line.split(",")[0] for line in lines[1:]) == ['"Ana (2)"', '"Ana"', '"Bo"']
    assert counts(room) == (1, 3, 3)
    room.end(started.code, started.teacher_key)
    assert counts(room) == (0, 0, 0)  # ending a class deletes everything it stored
    refused("unknown_class", room.join, "d", started.code, "Cy")


def test_secrets_are_stored_hashed(room: Classroom) -> None:
    started = room.start("t", "zh")
    joined = room.join("a", started.code, "小明")
    with room.session() as db:
        row = db.scalars(select(ClassRow)).one()
        student = db.scalars(select(StudentRow)).one()
    assert started.teacher_key not in row.teacher_key_hash and row.teacher_key_hash == rules.digest(started.teacher_key)
    assert student.token_hash == rules.digest(joined.token) and joined.token != student.token_hash


def test_who_may_do_what(room: Classroom) -> None:
    one, other = room.start("t", "en"), room.start("t", "en")
    student = room.join("a", one.code, "Ana")
    step(room, one.code, one.teacher_key)
    before = counts(room)
    refused("not_teacher", room.reveal, one.code, student.token)  # a student's token is no teacher key
    refused("not_teacher", room.reveal, one.code, other.teacher_key)  # nor is another class's key
    refused("not_teacher", room.end, one.code, None)
    refused("not_student", room.answer, other.code, student.token, "it")  # a token of another class
    refused("not_student", room.answer, one.code, one.teacher_key, "it")
    assert counts(room) == before


def test_limits(room: Classroom, clock: Clock) -> None:
    started = room.start("t", "en")
    tokens = [room.join(f"c{i}", started.code, f"S{i}").token for i in range(5)]
    refused("too_many_students", room.join, "c9", started.code, "S9")
    for question in ("q1", "q2"):
        step(room, started.code, started.teacher_key, question)
        room.answer(started.code, tokens[0], "it")
    step(room, started.code, started.teacher_key)  # the same question again: changing it is no new answer
    room.answer(started.code, tokens[0], "x")
    assert counts(room)[2] == 2
    room.start("t", "en"), room.start("t", "en")
    refused("too_many_classes", room.start, "t", "en")
    clock.now += timedelta(seconds=3601)  # a day later (here, the test's hour): every class expired
    refused("unknown_class", room.teacher_view, started.code, started.teacher_key)
    room.start("t", "en")  # starting a class deletes the expired ones and their answers
    assert counts(room) == (1, 0, 0)


def test_joins_and_guesses_are_rate_limited(room: Classroom) -> None:
    started = room.start("t", "en")
    for guess in ("ZZZZZZ", "22222X", "not a code"):
        refused("unknown_class", room.join, "guesser", guess, "x")
    error = refused("too_many_attempts", room.join, "guesser", started.code, "x")  # even the right code, now
    assert error.status == 429 and error.values["seconds"] > 0
    with pytest.raises(ClassError), room.guarded("guesser"):
        pass  # every route is guarded the same way (app/classes.py)
    room.join("someone else", started.code, "x")


def test_hostile_nicknames_are_refused_and_change_nothing(room: Classroom) -> None:
    started = room.start("t", "en")
    before = counts(room)
    for nickname, code in [("x" * 10_000, "nickname_too_long"), ("<b>Ana</b>", "nickname_characters"),
                           ("=HYPERLINK(1)", "nickname_characters"), ("a\u0000b", "nickname_characters"),
                           ("   ", "nickname_empty")]:
        refused(code, room.join, "n", started.code, nickname)
    assert counts(room) == before


def test_sixty_answers_at_once_are_all_stored(room: Classroom) -> None:
    started = room.start("t", "en")
    room.limits = Limits(students=100, answers=10, classes=3, ttl_s=3600)
    tokens = [room.join(f"c{i}", started.code, f"S{i}").token for i in range(60)]
    step(room, started.code, started.teacher_key)
    barrier, failures = threading.Barrier(60), []

    def answer(token: str, i: int) -> None:
        barrier.wait()
        try:
            room.answer(started.code, token, "it" if i % 3 else "the")
        except Exception as error:  # noqa: BLE001 - collected and asserted below
            failures.append(repr(error))

    threads = [threading.Thread(target=answer, args=(token, i)) for i, token in enumerate(tokens)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures[:3]
    view = room.teacher_view(started.code, started.teacher_key)
    assert view["answered"] == 60 and {b["value"]: b["count"] for b in view["distribution"]} == {"it": 40, "the": 20}
