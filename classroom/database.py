"""The database: SQLite in a data folder by default (zero setup), PostgreSQL (psycopg 3) when a URL names one.

Every write takes the database's write lock at its start (SQLite: BEGIN IMMEDIATE; PostgreSQL: the class row
FOR UPDATE in service.py), so two requests, or two server replicas on one file, never read a count and then
both write past a limit, and SQLite never fails a deferred transaction that lost the race to upgrade its lock.
A burst of answers does not queue here, one writer each: group_writer.py commits them in groups, so SQLite's
busy handler (which sleeps with back-off) is met only by other replicas' writers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.orm import Session, sessionmaker

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
SQLITE_FILE = "classes.sqlite"


def database_url(url: str | None, data_dir: Path) -> str:
    """TE_DATABASE_URL when set (postgresql://... is read with psycopg 3), else SQLite in the data folder."""
    if url:
        for plain in ("postgresql://", "postgres://"):
            if url.startswith(plain):
                return "postgresql+psycopg://" + url[len(plain):]
        return url
    return f"sqlite:///{(data_dir / SQLITE_FILE).resolve()}"


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        path = url.split("///", 1)[1] if "///" in url else ""
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": 15}, pool_size=8, max_overflow=32)

        @event.listens_for(engine, "connect")
        def _connect(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.isolation_level = None  # we say BEGIN ourselves (below), pysqlite does not
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")  # readers do not wait for the writer; one file per replica
            cursor.execute("PRAGMA synchronous=NORMAL")  # WAL: a commit survives a killed server (not a power cut)
            cursor.execute("PRAGMA foreign_keys=ON")  # ending a class deletes its students and answers
            cursor.execute("PRAGMA busy_timeout=15000")
            cursor.close()

        @event.listens_for(engine, "begin")
        def _begin(connection: Any) -> None:
            # a reader (sessions(engine, write=False)) begins deferred: it takes no lock, and WAL lets it read
            # while a writer writes; every other transaction takes the write lock at once
            connection.exec_driver_sql(f"BEGIN {connection.get_execution_options().get('sqlite_begin', 'IMMEDIATE')}")

        return engine
    return create_engine(url, pool_size=10, max_overflow=30, pool_pre_ping=True)


def sessions(engine: Engine, write: bool = True) -> sessionmaker[Session]:
    """Sessions for writing (SQLite: BEGIN IMMEDIATE) or for reading only (BEGIN DEFERRED; PostgreSQL: the same)."""
    bind = engine if write else engine.execution_options(sqlite_begin="DEFERRED")
    return sessionmaker(bind, expire_on_commit=False)


def upgrade(engine: Engine) -> None:
    """Run the migrations to the newest, once even when several replicas start together: the migration holds
    the database's write lock (SQLite) or an advisory lock (PostgreSQL), and the next one finds nothing to do."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:
        if engine.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(4242042)"))
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        try:
            return connection.execute(text("SELECT version_num FROM alembic_version")).scalar()
        except Exception:  # no table yet: never migrated
            return None
