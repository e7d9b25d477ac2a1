"""the rate limits' attempts, in the database so every replica counts the same ones (classroom/rate_limit.py)

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "attempts",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("client", sa.String(64), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_attempts_kind_client_at", "attempts", ["kind", "client", "at"])
    op.create_index("ix_attempts_at", "attempts", ["at"])


def downgrade() -> None:
    op.drop_table("attempts")
