"""classes, students and answers (issue 42)

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "classes",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("code", sa.String(6), nullable=False),
        sa.Column("teacher_key_hash", sa.String(64), nullable=False),
        sa.Column("lang", sa.String(8), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("chapter", sa.String(64), nullable=True),
        sa.Column("question", sa.String(64), nullable=True),
        sa.Column("revealed", sa.Boolean, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
    )
    op.create_index("ix_classes_code", "classes", ["code"], unique=True)
    op.create_index("ix_classes_expires_at", "classes", ["expires_at"])
    op.create_table(
        "students",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("class_id", sa.Integer, sa.ForeignKey("classes.id", ondelete="CASCADE"), nullable=False),
        sa.Column("nickname", sa.String(32), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("joined_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("class_id", "nickname"),
    )
    op.create_index("ix_students_class_id", "students", ["class_id"])
    op.create_table(
        "answers",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("class_id", sa.Integer, sa.ForeignKey("classes.id", ondelete="CASCADE"), nullable=False),
        sa.Column("student_id", sa.Integer, sa.ForeignKey("students.id", ondelete="CASCADE"), nullable=False),
        sa.Column("chapter", sa.String(64), nullable=False),
        sa.Column("question", sa.String(64), nullable=False),
        sa.Column("value", sa.String(64), nullable=False),
        sa.Column("correct", sa.Boolean, nullable=True),
        sa.Column("answered_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("student_id", "chapter", "question"),
    )
    op.create_index("ix_answers_class_id", "answers", ["class_id"])
    op.create_index("ix_answers_student_id", "answers", ["student_id"])


def downgrade() -> None:
    op.drop_table("answers")
    op.drop_table("students")
    op.drop_table("classes")
