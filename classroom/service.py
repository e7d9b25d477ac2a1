"""Every action of a class session, each one transaction that is committed before it returns (so an answer is on
disk before its 200 is sent; answers arriving together share one, group_writer.py). The web layer parses, calls
one method here and responds.

Who may do what is decided here, from the secret each caller holds: the teacher's key (start) for step, reveal,
CSV and end; a student's token (join) for answering and for their own answers. Nobody is named to anyone but the
teacher's CSV; the distribution a projector shows has values and counts only.
"""

from __future__ import annotations

import contextlib
import csv
import hmac
import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Protocol

from sqlalchemy import Engine, delete, func, select, update
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from classroom import answer_group, errors, rules
from classroom.database import sessions
from classroom.group_writer import GroupWriter
from classroom.models import AnswerRow, ClassRow, StudentRow
from classroom.rate_limit import FAILED_CODE, JOIN, START, Attempts

DISTRIBUTION_BARS = 12  # the most answers a chart shows by value; the rest are counted together as `other`


@dataclass(frozen=True)
class Limits:
    students: int = 100  # per class
    answers: int = 200  # per student (questions answered; changing an answer before the reveal is not a new one)
    classes: int = 50  # running on this database at once
    ttl_s: int = 24 * 3600  # a class is deleted a day after it starts
    joins: int = 60  # join attempts per client in `window_s`
    failed_codes: int = 10  # requests naming no running class (any route), per client in `window_s`
    starts: int = 10  # classes one client may start in `window_s`
    window_s: int = 600


class Questions(Protocol):
    """How an answer is checked against the question asked (app/ hands in the lessons' verdict)."""

    def check(self, asked: dict[str, Any], value: str) -> tuple[str, bool | None]:
        """The answer as stored (normalized) and whether it is right (None: cannot be checked); a ClassError
        (422) for an answer the question does not take."""
        ...


# what a page sees of the question asked: before the reveal no answer; after it, the answer and why
QUESTION_FIELDS = ("id", "kind", "answer_type", "prompt", "options", "tolerance")
REVEALED_FIELDS = ("answer", "accepted", "measured", "why")


@dataclass(frozen=True)
class Started:
    code: str
    teacher_key: str
    expires_at: datetime


@dataclass(frozen=True)
class Joined:
    code: str
    nickname: str
    token: str


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def utc(moment: datetime) -> datetime:
    """SQLite gives back the naive UTC it stored; PostgreSQL an aware one."""
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


class Classroom:
    def __init__(self, engine: Engine, questions: Questions, limits: Limits | None = None,
                 clock: Callable[[], datetime] = utc_now) -> None:
        self.engine, self.questions, self.limits, self.clock = engine, questions, limits or Limits(), clock
        self.session = sessions(engine)  # .begin(): a write; reads use self.read (no write lock)
        self.read = sessions(engine, write=False)
        self.attempts = Attempts(engine, self.limits.window_s)  # in the database: every replica counts the same
        # answers come in bursts (a class answering at once): one thread commits them in groups (group_writer.py)
        self.answers = GroupWriter(self._write_answers, "class-answers", fails_all=(OperationalError,))

    # ------------------------------------------------------------ finding a class and its caller

    @contextlib.contextmanager
    def guarded(self, client: str, check: bool = True) -> Iterator[None]:
        """Around every request that names a class: a client whose codes named no running class
        `failed_codes` times in the window is refused before its next lookup, on every route, so no route
        tells a guesser which codes exist faster than joining would. `check=False`: the action checks it
        itself (answer(): one query for its whole group, in the group's transaction)."""
        wait = self.attempts.wait_s(FAILED_CODE, client, self.limits.failed_codes, self.clock()) if check else 0
        if wait:
            raise errors.too_many_attempts(wait)
        try:
            yield
        except errors.ClassError as error:
            if error.code == "unknown_class" and not error.counted:  # once, however many guards it passes
                error.counted = True
                self.attempts.count(FAILED_CODE, client, self.clock())
            raise

    def _class(self, db: Session, code: str, lock: bool = False) -> ClassRow:
        found = rules.code_from(code)
        if found is None:
            raise errors.unknown_class()
        query = select(ClassRow).where(ClassRow.code == found, ClassRow.expires_at > self.clock())
        row = db.scalars(query.with_for_update() if lock else query).first()
        if row is None:
            raise errors.unknown_class()
        return row

    def _teacher(self, db: Session, code: str, key: str | None, lock: bool = False) -> ClassRow:
        row = self._class(db, code, lock)
        if not key or not hmac.compare_digest(row.teacher_key_hash, rules.digest(key)):
            raise errors.not_teacher()
        return row

    def _student(self, db: Session, row: ClassRow, token: str | None) -> StudentRow:
        student = db.scalars(select(StudentRow).where(StudentRow.class_id == row.id,
                                                      StudentRow.token_hash == rules.digest(token or ""))).first()
        if token is None or student is None:
            raise errors.not_student()
        return student

    def _bump(self, db: Session, row: ClassRow) -> None:
        db.execute(update(ClassRow).where(ClassRow.id == row.id).values(version=ClassRow.version + 1))

    # ------------------------------------------------------------ the teacher

    def start(self, client: str, lang: str) -> Started:
        wait = self.attempts.take(START, client, self.limits.starts, self.clock())
        if wait:
            raise errors.too_many_attempts(wait)
        now = self.clock()
        with self.session.begin() as db:
            db.execute(delete(ClassRow).where(ClassRow.expires_at <= now))  # expired classes go, with their data
            running = db.scalar(select(func.count()).select_from(ClassRow)) or 0
            if running >= self.limits.classes:
                raise errors.too_many("classes", self.limits.classes)
            taken = True
            while taken:  # a collision among 887 million codes is rare; retried, never shared
                code = rules.new_code()
                taken = db.scalar(select(ClassRow.id).where(ClassRow.code == code)) is not None
            key = rules.new_secret()
            expires = now + timedelta(seconds=self.limits.ttl_s)
            db.add(ClassRow(code=code, teacher_key_hash=rules.digest(key), lang=lang, created_at=now,
                            expires_at=expires, chapter=None, question=None, revealed=False, version=0))
        return Started(code, key, expires)

    def check_teacher(self, code: str, key: str | None) -> str:
        """The class's code when `key` is its teacher's (a live stream checks once, then polls the version)."""
        with self.read() as db:
            return self._teacher(db, code, key).code

    def lang_of(self, code: str, key: str | None) -> str:
        """The class's language, for its teacher only (the question is asked in it)."""
        with self.read() as db:
            return self._teacher(db, code, key).lang

    def step(self, code: str, key: str | None, chapter: str, question: str, asked: dict[str, Any]) -> dict[str, Any]:
        """Move the class to a question, as the lessons asked it (`asked`, measured by the caller)."""
        chapter, question = rules.name_from(chapter, "chapter"), rules.name_from(question, "question")
        with self.session.begin() as db:
            row = self._teacher(db, code, key, lock=True)
            row.chapter, row.question, row.revealed = chapter, question, False
            row.asked = json.dumps(asked, ensure_ascii=False)
            self._bump(db, row)
        return self.teacher_view(code, key)

    def reveal(self, code: str, key: str | None) -> dict[str, Any]:
        with self.session.begin() as db:
            row = self._teacher(db, code, key, lock=True)
            if row.question is None:
                raise errors.ClassError(409, "no_question", "Move the class to a question before revealing it.")
            row.revealed = True
            self._bump(db, row)
        return self.teacher_view(code, key)

    def end(self, code: str, key: str | None) -> None:
        """Deletes the class, its students and their answers (the CSV was the last copy)."""
        with self.session.begin() as db:
            row = self._teacher(db, code, key, lock=True)
            db.execute(delete(AnswerRow).where(AnswerRow.class_id == row.id))
            db.execute(delete(StudentRow).where(StudentRow.class_id == row.id))
            db.delete(row)

    def answers_csv(self, code: str, key: str | None) -> str:
        with self.read() as db:
            row = self._teacher(db, code, key)
            rows = db.execute(select(StudentRow.nickname, AnswerRow.chapter, AnswerRow.question, AnswerRow.value,
                                     AnswerRow.correct, AnswerRow.answered_at)
                              .join(StudentRow, StudentRow.id == AnswerRow.student_id)
                              .where(AnswerRow.class_id == row.id)
                              .order_by(AnswerRow.chapter, AnswerRow.question, StudentRow.nickname)).all()
        out = io.StringIO()
        writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
        writer.writerow(["nickname", "chapter", "question", "answer", "correct", "answered_at"])
        for nickname, chapter, question, value, correct, at in rows:
            writer.writerow([_cell(nickname), chapter, question, _cell(value),
                             "" if correct is None else str(correct).lower(), utc(at).isoformat()])
        return out.getvalue()

    def teacher_view(self, code: str, key: str | None) -> dict[str, Any]:
        with self.read() as db:
            return self._view(db, self._teacher(db, code, key), teacher=True)

    # ------------------------------------------------------------ a student

    def join(self, client: str, code: str, nickname: str) -> Joined:
        wait = self.attempts.take(JOIN, client, self.limits.joins, self.clock())  # counted even if the join fails
        if wait:
            raise errors.too_many_attempts(wait)
        token = rules.new_secret()
        with self.guarded(client), self.session.begin() as db:
            row = self._class(db, code, lock=True)  # the class first: a wrong code is told before a bad nickname
            name = rules.nickname_from(nickname)
            taken = set(db.scalars(select(StudentRow.nickname).where(StudentRow.class_id == row.id)))
            if len(taken) >= self.limits.students:
                raise errors.too_many("students", self.limits.students)
            shown, number = name, 1
            while shown in taken:  # "Ana", then "Ana (2)": two students are told apart, never refused
                number += 1
                shown = f"{name} ({number})"
            db.add(StudentRow(class_id=row.id, nickname=shown, token_hash=rules.digest(token),
                              joined_at=self.clock()))
            self._bump(db, row)
            found = row.code
        return Joined(found, shown, token)

    def answer(self, code: str, token: str | None, value: str, client: str | None = None) -> dict[str, Any]:
        """Store the student's answer to the question asked (or change it, until the reveal): queued with the
        answers arriving meanwhile, and returned once their transaction is committed (group_writer.py).
        `client`: refused first if it named too many unknown codes (what guarded() checks for other routes)."""
        stored: dict[str, Any] = self.answers.submit(code, token, value, client)
        return stored

    def _write_answers(self, group: list[tuple[Any, ...]]) -> list[Any]:
        now = self.clock()
        with self.engine.begin() as db:  # SQLite: BEGIN IMMEDIATE (database.py); the check needs no model
            clients = {client for *_, client in group if client is not None}
            blocked = self.attempts.waits(db, FAILED_CODE, clients, self.limits.failed_codes, now)
            return answer_group.write(db, group, self.questions, self.limits.answers, now, blocked)

    def student_view(self, code: str, token: str | None) -> dict[str, Any]:
        with self.read() as db:
            row = self._class(db, code)
            student = self._student(db, row, token)
            view = self._view(db, row, teacher=False)
            mine = db.scalars(select(AnswerRow).where(AnswerRow.student_id == student.id,
                                                      AnswerRow.chapter == row.chapter,
                                                      AnswerRow.question == row.question)).first()
        view["nickname"] = student.nickname
        view["mine"] = None if mine is None else {
            "value": mine.value, "correct": mine.correct if row.revealed else None}
        return view

    def check_student(self, code: str, token: str | None) -> str:
        with self.read() as db:
            row = self._class(db, code)
            self._student(db, row, token)
            return row.code

    # ------------------------------------------------------------ what every page of a class sees

    def versions(self, codes: list[str]) -> dict[str, int]:
        """The version of each running class named (an ended or expired one is missing): what live streams poll."""
        if not codes:
            return {}
        with self.read() as db:
            found = db.execute(select(ClassRow.code, ClassRow.version)
                               .where(ClassRow.code.in_(codes), ClassRow.expires_at > self.clock())).all()
        return {code: version for code, version in found}

    def live_view(self, code: str, teacher: bool) -> dict[str, Any]:
        """A stream's event: the same for every student of a class (their own answer they read with
        student_view), and the teacher's with the distribution before the reveal too."""
        with self.read() as db:
            return self._view(db, self._class(db, code), teacher)

    def _view(self, db: Session, row: ClassRow, teacher: bool) -> dict[str, Any]:
        students = db.scalar(select(func.count()).where(StudentRow.class_id == row.id)) or 0
        counts = db.execute(select(AnswerRow.value, AnswerRow.correct, func.count())
                            .where(AnswerRow.class_id == row.id, AnswerRow.chapter == row.chapter,
                                   AnswerRow.question == row.question)
                            .group_by(AnswerRow.value, AnswerRow.correct)
                            .order_by(func.count().desc(), AnswerRow.value)).all()
        asked = json.loads(row.asked) if row.asked else None
        shown = QUESTION_FIELDS + (REVEALED_FIELDS if row.revealed else ())
        view: dict[str, Any] = {
            "code": row.code, "lang": row.lang, "chapter": row.chapter, "question": row.question,
            "asked": {k: asked.get(k) for k in shown} if asked else None,
            "revealed": row.revealed, "version": row.version, "students": students,
            "answered": sum(n for _, _, n in counts), "expires_at": utc(row.expires_at).isoformat(),
        }
        if teacher or row.revealed:  # which answer is right shows on no screen before the reveal
            bars = [{"value": value, "count": n, "correct": correct if row.revealed else None}
                    for value, correct, n in counts[:DISTRIBUTION_BARS]]
            view["distribution"] = bars
            view["other"] = sum(n for _, _, n in counts[DISTRIBUTION_BARS:])
        return view


def _cell(text: str) -> str:
    """A spreadsheet would run a cell starting with = + - @ as a formula: such a cell starts with a quote."""
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text
