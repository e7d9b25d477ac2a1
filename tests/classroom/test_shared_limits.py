"""Two Classroom objects on one database, as two server replicas are (SQLite, and PostgreSQL where installed): the
rate limits count the same attempts, the answer limits hold under concurrent answers, and answers written in
groups (classroom/group_writer.py) are each stored or refused on their own."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from functools import partial
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import OperationalError

from classroom import database
from classroom.errors import ClassError
from classroom.group_writer import GroupWriter, Job
from classroom.models import AnswerRow, AttemptRow
from classroom.service import Classroom, Limits
from tests.classroom.test_service import Clock, Questions, refused, step

LIMITS = Limits(students=100, answers=1, classes=20, ttl_s=3600, joins=4, failed_codes=3, starts=3, window_s=600)


class Exploding(Questions):
    """An answer "boom" breaks the check with an error that is no refusal (a bug, a dropped connection)."""

    def check(self, asked: dict[str, Any], value: str) -> tuple[str, bool | None]:
        if value == "boom":
            raise RuntimeError("boom")
        return super().check(asked, value)


@pytest.fixture()
def clock() -> Clock:
    return Clock()


@pytest.fixture()
def rooms(database_url: str, clock: Clock) -> Iterator[tuple[Classroom, Classroom]]:
    engines = [database.make_engine(database_url) for _ in range(2)]
    database.upgrade(engines[0])
    yield Classroom(engines[0], Exploding(), LIMITS, clock), Classroom(engines[1], Exploding(), LIMITS, clock)
    for engine in engines:
        engine.dispose()


def at_once(calls: Sequence[Callable[[], Any]]) -> list[Any]:
    """Run every call at the same instant, each in its own thread: its result or the exception it raised."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = calls[i]()
        except Exception as error:  # noqa: BLE001 - returned to the test
            results[i] = error

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def codes(results: list[Any]) -> list[str]:
    return sorted(r.code if isinstance(r, ClassError) else "ok" if not isinstance(r, Exception) else repr(r)
                  for r in results)


def test_rate_limits_are_shared_by_two_replicas(rooms: tuple[Classroom, Classroom], clock: Clock) -> None:
    a, b = rooms
    started = [a.start("teacher", "en"), b.start("teacher", "en"), a.start("teacher", "en")]
    refused("too_many_attempts", b.start, "teacher", "en")  # 3 starts per client, whichever replica counted them
    code = started[0].code
    a.join("student", code, "S1"), b.join("student", code, "S2"), a.join("student", code, "S3")
    b.join("student", code, "S4")
    for room in rooms:  # 4 joins per client in all
        refused("too_many_attempts", room.join, "student", code, "S5")
    for room, guess in ((a, "ZZZZZZ"), (b, "22222X"), (a, "33333X")):  # 3 unknown codes, on either replica
        with pytest.raises(ClassError), room.guarded("guesser"):
            room.teacher_view(guess, "key")
    for room in rooms:
        with pytest.raises(ClassError) as caught, room.guarded("guesser"):
            room.teacher_view(code, started[0].teacher_key)  # even the right code, now
        assert caught.value.code == "too_many_attempts" and 0 < caught.value.values["seconds"] <= 601
    clock.now += timedelta(seconds=601)  # the window passed: every client may try again
    with a.guarded("guesser"):
        a.teacher_view(code, started[0].teacher_key)
    b.start("teacher", "en")
    with a.session() as db:  # the start's insert pruned every attempt older than the window
        assert db.scalar(select(func.count()).select_from(AttemptRow)) == 1


def test_concurrent_attempts_never_pass_the_limit(rooms: tuple[Classroom, Classroom]) -> None:
    a, b = rooms
    code = a.start("teacher", "en").code
    joins = at_once([partial((a, b)[i % 2].join, "one device", code, f"S{i}") for i in range(12)])
    assert codes(joins) == ["ok"] * 4 + ["too_many_attempts"] * 8


def test_answers_at_once_on_two_replicas_keep_every_limit(rooms: tuple[Classroom, Classroom]) -> None:
    a, b = rooms
    classes = [a.start("t1", "en"), b.start("t2", "en")]
    tokens = {c.code: [(a, b)[i % 2].join(f"c{i}", c.code, f"S{i}").token for i in range(30)] for c in classes}
    for c in classes:
        step(a, c.code, c.teacher_key)
    # every student of both classes answers at once through both replicas, one of them three times: stored once
    calls = [partial((a, b)[i % 2].answer, c.code, t, "it" if i % 3 else "the")
             for c in classes for i, t in enumerate(tokens[c.code])]
    calls += [partial((a, b)[i % 2].answer, classes[0].code, tokens[classes[0].code][0], "x") for i in range(3)]
    assert codes(at_once(calls)) == ["ok"] * 63
    for c in classes:
        view = a.teacher_view(c.code, c.teacher_key)
        assert view["answered"] == 30 and view["version"] >= 2
    step(a, classes[0].code, classes[0].teacher_key, "q2")  # one answer per student (LIMITS): the next is refused
    refusals = at_once([partial((a, b)[i % 2].answer, classes[0].code, tokens[classes[0].code][0], "it")
                        for i in range(6)])
    assert codes(refusals) == ["too_many_answers"] * 6
    with a.session() as db:
        assert db.scalar(select(func.count()).select_from(AnswerRow)) == 60


def test_one_request_in_a_group_fails_alone(rooms: tuple[Classroom, Classroom]) -> None:
    a, _ = rooms
    started = a.start("t", "en")
    tokens = [a.join(f"c{i}", started.code, f"S{i}").token for i in range(4)]
    step(a, started.code, started.teacher_key)
    for guess in ("ZZZZZZ", "22222X", "33333X"):  # a client that named 3 unknown codes (the limit) is refused
        with pytest.raises(ClassError), a.guarded("guesser"):
            a.teacher_view(guess, "key")
    group = [(started.code, tokens[0], "it", "c0"), (started.code, "not a token", "it", "x"),
             (started.code, tokens[1], "?", None), ("ZZZZZZ", tokens[0], "it", "c0"),
             (started.code, tokens[2], "boom", None), (started.code, tokens[3], "the", "c3")]
    # one transaction: refusals beside stored answers, each request told its own
    outcomes = a._write_answers([*group[:4], (started.code, tokens[3], "it", "guesser")])
    assert [getattr(o, "code", "ok") for o in outcomes] == ["ok", "not_student", "invalid_answer", "unknown_class",
                                                            "too_many_attempts"]
    # an error that is no refusal rolls the group back; each request is then written alone
    jobs = [Job(args) for args in group]
    a.answers._write(jobs)
    assert [getattr(j.done.exception(), "code", "ok") for j in jobs] == ["ok", "not_student", "invalid_answer",
                                                                         "unknown_class", "ok", "ok"]
    assert isinstance(jobs[4].done.exception(), RuntimeError) and jobs[5].done.result()["value"] == "the"
    assert a.teacher_view(started.code, started.teacher_key)["answered"] == 2


def test_a_database_failure_is_told_to_the_whole_group_at_once() -> None:
    calls: list[int] = []

    def unreachable(group: list[tuple[Any, ...]]) -> list[Any]:
        calls.append(len(group))
        raise OperationalError("BEGIN", {}, Exception("database is locked"))

    writer = GroupWriter(unreachable, "test", fails_all=(OperationalError,))
    jobs = [Job(("ABCDEF", "token", str(i), None)) for i in range(5)]
    writer._write(jobs)
    assert calls == [5] and all(isinstance(job.done.exception(), OperationalError) for job in jobs)
