"""The class database's tests run on SQLite always and on PostgreSQL where it is installed (a throwaway cluster,
tests/classroom/postgres.py; skipped with a message elsewhere, installed in CI by .ci/run)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.classroom import postgres


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    why = postgres.missing()
    if why and os.environ.get(postgres.REQUIRED):  # CI (.ci/run): the PostgreSQL tests must run, never skip
        pytest.fail(f"{postgres.REQUIRED} is set, but {why}")
    if why:
        pytest.skip(why)
    with postgres.cluster() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty database of each kind (PostgreSQL: the session's cluster, its tables dropped first)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'classes.sqlite'}"
    url: str = request.getfixturevalue("postgres_url")
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    with engine.begin() as connection:
        connection.execute(text("DROP TABLE IF EXISTS attempts, answers, students, classes, alembic_version CASCADE"))
    engine.dispose()
    return url
