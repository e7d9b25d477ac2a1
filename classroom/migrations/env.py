"""Alembic's environment: the migrations run on the connection classroom.database.upgrade() hands in (a CLI
command or the server's startup), so there is no alembic.ini and no second place naming the database."""

from __future__ import annotations

from alembic import context

from classroom.models import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
