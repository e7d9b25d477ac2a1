"""A refusal of the class service: an HTTP status, a code, the English message, and the reason and values a page
words in its own language (static/text/shared.<lang>.json: messages_detail_<reason>). app/ turns it into the
API's error shape; nothing here knows HTTP beyond the number."""

from __future__ import annotations

from typing import Any


class ClassError(Exception):
    def __init__(self, status: int, code: str, message: str, **values: Any) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.values = status, code, message, values
        self.counted = False  # a failed lookup counted against its client (service.Classroom.guarded)


def unknown_class() -> ClassError:
    # one answer for a code never used, one that ended and one that expired: a guess learns nothing
    return ClassError(404, "unknown_class", "No class with this code is running: check the code with your teacher "
                                            "(a class ends when the teacher ends it, or after a day).")


def not_teacher() -> ClassError:
    return ClassError(403, "not_teacher", "Only the teacher of this class can do this (open the teacher's link).")


def not_student() -> ClassError:
    return ClassError(403, "not_student", "Join this class with a nickname first.")


def too_many(what: str, limit: int) -> ClassError:
    messages = {
        "students": f"This class is full: it has room for {limit} students.",
        "answers": f"You have answered {limit} questions in this class, the most one student may.",
        "classes": f"This server is running {limit} classes, the most it holds; end one or try again later.",
        "streams": f"This server follows {limit} live pages of this class already; close one and reload.",
    }
    return ClassError(409 if what != "streams" else 503, f"too_many_{what}", messages[what], limit=limit)


def too_many_attempts(seconds: int) -> ClassError:
    return ClassError(429, "too_many_attempts", f"Too many tries from this device: wait {seconds} seconds and "
                                                "check the class code.", seconds=seconds)
