"""The tables of a class session. A class row carries where the teacher is (chapter, question, revealed) and a
version that every change bumps, which is what the live streams of every server replica poll."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, DateTime, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# lengths the rules (classroom/rules.py) hold every value to before it is stored
CODE_LENGTH = 6
NICKNAME_MAX = 24
VALUE_MAX = 64
NAME_MAX = 64  # a chapter's or a question's id
CLIENT_MAX = 64  # a client's address as the rate limits count it (IPv6 with a zone fits)


class Base(DeclarativeBase):
    pass


class ClassRow(Base):
    __tablename__ = "classes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    code: Mapped[str] = mapped_column(String(CODE_LENGTH), unique=True, index=True)
    teacher_key_hash: Mapped[str] = mapped_column(String(64))  # sha256 hex of the teacher's key; the key is not kept
    lang: Mapped[str] = mapped_column(String(8))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    chapter: Mapped[str | None] = mapped_column(String(NAME_MAX), nullable=True)
    question: Mapped[str | None] = mapped_column(String(NAME_MAX), nullable=True)
    # the question asked, as the lessons measured it when the teacher asked (JSON: prompt, options, answer,
    # accepted, tolerance, measured, why): answers are checked on it, with no model (migration 0002)
    asked: Mapped[str | None] = mapped_column(Text, nullable=True)
    revealed: Mapped[bool] = mapped_column(Boolean, default=False)
    version: Mapped[int] = mapped_column(Integer, default=0)


class StudentRow(Base):
    __tablename__ = "students"
    __table_args__ = (UniqueConstraint("class_id", "nickname"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    class_id: Mapped[int] = mapped_column(ForeignKey("classes.id", ondelete="CASCADE"), index=True)
    nickname: Mapped[str] = mapped_column(String(NICKNAME_MAX + 8))  # room for " (99)"
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    joined_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class AnswerRow(Base):
    __tablename__ = "answers"
    __table_args__ = (UniqueConstraint("student_id", "chapter", "question"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    class_id: Mapped[int] = mapped_column(ForeignKey("classes.id", ondelete="CASCADE"), index=True)
    student_id: Mapped[int] = mapped_column(ForeignKey("students.id", ondelete="CASCADE"), index=True)
    chapter: Mapped[str] = mapped_column(String(NAME_MAX))
    question: Mapped[str] = mapped_column(String(NAME_MAX))
    value: Mapped[str] = mapped_column(String(VALUE_MAX))
    correct: Mapped[bool | None] = mapped_column(Boolean, nullable=True)  # None: the questions could not check it
    answered_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class AttemptRow(Base):
    """One attempt a rate limit counts (classroom/rate_limit.py): deleted once older than the window."""

    __tablename__ = "attempts"
    __table_args__ = (Index("ix_attempts_kind_client_at", "kind", "client", "at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))  # join, failed_code, start
    client: Mapped[str] = mapped_column(String(CLIENT_MAX))
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)  # the index: pruning by age
