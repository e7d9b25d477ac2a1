"""deploy/postgres-entrypoint.sh, the class database's container start, run here on the host's PostgreSQL (the
binaries Debian's `postgresql` package installs, as the image does; skipped with a message where there are none,
required in CI): the first start makes the cluster, the app's user (a password over TCP, no superuser) and its
database, which the app then migrates as that user; a second start on the same folder keeps everything."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.exc import OperationalError

from tests.classroom import postgres
from tests.conftest import ROOT

SCRIPT = ROOT / "deploy" / "postgres-entrypoint.sh"
PASSWORD = "it's a \"secret\" \\ ;"  # quotes, a backslash, a semicolon: quoted by psql, not by hand


@pytest.fixture()
def folder() -> Iterator[Path]:
    why = postgres.missing()
    if why and os.environ.get(postgres.REQUIRED):
        pytest.fail(f"{postgres.REQUIRED} is set, but {why}")
    if why:
        pytest.skip(why)
    root = Path(tempfile.mkdtemp(prefix="te-pg-image-"))
    if os.geteuid() == 0:  # PostgreSQL refuses root: the script runs as `nobody` (in the image: as `postgres`)
        import pwd

        user = pwd.getpwnam("nobody")
        os.chown(root, user.pw_uid, user.pw_gid)
    yield root
    subprocess.run(["rm", "-rf", str(root)], check=False)


@contextmanager
def container(root: Path, port: int) -> Iterator[subprocess.Popen[str]]:
    """The script as the container runs it (in the foreground), on 127.0.0.1 only here; stopped as Docker stops
    the container (its STOPSIGNAL, SIGINT)."""
    env = {"PATH": os.environ["PATH"], "POSTGRES_USER": "explorer", "POSTGRES_PASSWORD": PASSWORD,
           "POSTGRES_DB": "classes", "PGDATA": str(root / "data"), "PGPORT": str(port),
           "PG_SOCKET_DIR": str(root), "POSTGRES_BIN": str(postgres.binaries())}
    as_user = ["runuser", "-u", "nobody", "--"] if os.geteuid() == 0 else []
    server = subprocess.Popen([*as_user, "sh", str(SCRIPT), "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"],
                              env=env, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              start_new_session=True)
    try:
        yield server
    finally:
        os.killpg(server.pid, signal.SIGINT)
        server.wait(timeout=60)


def connect(port: int, password: str = PASSWORD, timeout: float = 60) -> Engine:
    """The app's engine on the cluster once it takes TCP connections (the image's healthcheck: pg_isready on TCP)."""
    engine = create_engine(f"postgresql+psycopg://explorer@127.0.0.1:{port}/classes",
                           connect_args={"password": password, "connect_timeout": 5})
    deadline = time.monotonic() + timeout
    while True:
        try:
            with engine.connect():
                return engine
        except OperationalError as error:
            if "password authentication failed" in str(error) or time.monotonic() > deadline:
                engine.dispose()
                raise
            time.sleep(0.2)


def test_first_start_makes_the_users_database_and_a_restart_keeps_it(folder: Path) -> None:
    from classroom.database import current_revision, upgrade

    port = postgres._free_port()
    with container(folder, port) as server:
        engine = connect(port)
        with engine.connect() as connection:
            owner, superuser = connection.execute(text(
                "SELECT pg_get_userbyid(datdba), (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) "
                "FROM pg_database WHERE datname = current_database()")).one()
        assert (owner, superuser) == ("explorer", False)
        upgrade(engine)  # the app migrates its own database as its own user
        revision = current_revision(engine)
        assert revision
        engine.dispose()
        with pytest.raises(OperationalError, match="password authentication failed"):
            connect(port, password="wrong")
    first = server.stdout.read() if server.stdout else ""
    assert "first start" in first and server.returncode == 0, first

    with container(folder, port) as server:  # the volume kept: no new cluster, the tables and user still there
        engine = connect(port)
        assert current_revision(engine) == revision
        engine.dispose()
    second = server.stdout.read() if server.stdout else ""
    assert "first start" not in second and server.returncode == 0, second
