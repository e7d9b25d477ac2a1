"""A group of answers written in one transaction (group_writer.GroupWriter's apply), in a few Core statements per
class instead of six ORM round trips per answer.

Per class named in the group: the class row, locked (PostgreSQL: FOR UPDATE; SQLite: the transaction's BEGIN
IMMEDIATE already holds the file's write lock); one query for the group's students with, for each, their answer
to the question asked and how many they have given; then one INSERT of the new answers, one UPDATE of the changed
ones and one bump of the class's version. The limits are checked in Python on the counts read under the lock,
each answer after the group's earlier ones, so they hold exactly as if the answers came one by one, also across
replicas: another process's group on the same class waits for the lock and reads these answers' counts.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import Connection, bindparam, func, insert, select, update

from classroom import errors, rules
from classroom.models import AnswerRow, ClassRow, StudentRow


class Questions(Protocol):
    def check(self, asked: dict[str, Any], value: str) -> tuple[str, bool | None]: ...


def write(db: Connection, group: list[tuple[Any, ...]], questions: Questions, max_answers: int,
          now: datetime, blocked: dict[str, int] | None = None) -> list[Any]:
    """Each (code, token, value, client) of `group` stored, or refused: per request, its result or its
    ClassError. `blocked`: client -> seconds to wait, for clients that named too many unknown codes."""
    outcomes: list[Any] = [None] * len(group)
    by_class: dict[str, list[int]] = {}
    for i, (code, _token, _value, client) in enumerate(group):
        found = rules.code_from(code)
        if blocked and client in blocked:  # before any lookup, as service.Classroom.guarded does
            outcomes[i] = errors.too_many_attempts(blocked[client])
        elif found is None:
            outcomes[i] = errors.unknown_class()  # one error each: each request counts its own failed code
        else:
            by_class.setdefault(found, []).append(i)
    for code in sorted(by_class):  # every process locks classes in the same order: two replicas never deadlock
        _one_class(db, code, [(i, *group[i][1:3]) for i in by_class[code]], outcomes, questions, max_answers, now)
    return outcomes


def _one_class(db: Connection, code: str, answers: list[tuple[int, str | None, str]], outcomes: list[Any],
               questions: Questions, max_answers: int, now: datetime) -> None:
    row = db.execute(select(ClassRow.id, ClassRow.chapter, ClassRow.question, ClassRow.asked, ClassRow.revealed)
                     .where(ClassRow.code == code, ClassRow.expires_at > now).with_for_update()).first()
    if row is None:
        for i, _token, _value in answers:
            outcomes[i] = errors.unknown_class()
        return
    students = _students(db, row, {rules.digest(token) for _, token, _ in answers if token is not None})
    asked = json.loads(row.asked) if row.asked else None
    new: dict[int, dict[str, Any]] = {}  # student id -> the answer to insert (a second one in the group replaces it)
    changed: dict[int, dict[str, Any]] = {}  # answer id -> its new value (a student changing their mind)
    for i, token, text in answers:
        student = students.get(rules.digest(token)) if token is not None else None
        try:
            if student is None:  # who asks first: a stranger learns nothing of the question's state
                raise errors.not_student()
            if row.chapter is None or row.question is None or asked is None:
                raise errors.ClassError(409, "no_question", "Your teacher has not asked a question yet; wait for it.")
            if row.revealed:
                raise errors.ClassError(409, "already_revealed", "The answer was revealed: this question is closed.")
            value, correct = questions.check(asked, rules.answer_from(text))
            student_id, mine, given = student
            fields = {"value": value, "correct": correct, "answered_at": now}
            if mine is not None:  # bind names other than the columns' (SQLAlchemy reserves those for SET)
                changed[mine] = {"answer_id": mine, "new_value": value, "new_correct": correct, "at": now}
            elif student_id in new:
                new[student_id].update(fields)
            else:
                if given >= max_answers:
                    raise errors.too_many("answers", max_answers)
                new[student_id] = {"class_id": row.id, "student_id": student_id, "chapter": row.chapter,
                                   "question": row.question, **fields}
        except errors.ClassError as error:
            outcomes[i] = error
            continue
        outcomes[i] = {"chapter": row.chapter, "question": row.question, "value": value}
    if new:
        db.execute(insert(AnswerRow), list(new.values()))
    if changed:
        db.execute(update(AnswerRow).where(AnswerRow.id == bindparam("answer_id"))
                   .values(value=bindparam("new_value"), correct=bindparam("new_correct"),
                           answered_at=bindparam("at")), list(changed.values()))
    if new or changed:  # the live streams of every replica poll this version
        db.execute(update(ClassRow).where(ClassRow.id == row.id).values(version=ClassRow.version + 1))


def _students(db: Connection, row: Any, hashes: set[str]) -> dict[str, tuple[int, int | None, int]]:
    """`row`: the class (id, chapter, question). Per token hash: (student id, their answer to the question
    asked or None, how many answers they gave in all)."""
    if not hashes:
        return {}
    mine = (select(AnswerRow.id).where(AnswerRow.student_id == StudentRow.id, AnswerRow.chapter == row.chapter,
                                       AnswerRow.question == row.question).scalar_subquery())
    given = select(func.count(AnswerRow.id)).where(AnswerRow.student_id == StudentRow.id).scalar_subquery()
    found = db.execute(select(StudentRow.token_hash, StudentRow.id, mine, given)
                       .where(StudentRow.class_id == row.id, StudentRow.token_hash.in_(hashes)))
    return {token_hash: (student_id, answer_id, count) for token_hash, student_id, answer_id, count in found}
