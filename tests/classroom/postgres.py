"""A throwaway PostgreSQL cluster for the class database's tests: initdb and pg_ctl in a temporary folder, on a free
port, stopped and deleted afterwards. Debian's `postgresql` package (installed by .ci/run) puts them under
/usr/lib/postgresql/<version>/bin; PostgreSQL refuses to run as root, so as root the cluster runs as `nobody`."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REQUIRED = "REQUIRE_POSTGRES"  # set (.ci/run does): a test needing PostgreSQL fails where it would skip


def binaries() -> Path | None:
    found = shutil.which("pg_ctl")
    if found:
        return Path(os.path.realpath(found)).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(versions[-1]).parent if versions else None


def missing() -> str | None:
    """Why no cluster can start here, or None."""
    if binaries() is None:
        return "PostgreSQL is not installed (no initdb/pg_ctl; Debian: apt-get install postgresql): skipped"
    if os.geteuid() == 0 and not (shutil.which("runuser") and _has_user("nobody")):
        return "running as root without runuser and the user nobody: PostgreSQL cannot start"
    return None


def _has_user(name: str) -> bool:
    import pwd

    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def cluster() -> Iterator[str]:
    """Start a cluster; yield its SQLAlchemy URL (postgresql+psycopg://...); stop and delete it afterwards."""
    bin_dir = binaries()
    assert bin_dir is not None, missing()
    root = Path(tempfile.mkdtemp(prefix="te-pg-"))
    data, port = root / "data", _free_port()
    as_user: list[str] = []
    if os.geteuid() == 0:
        import pwd

        user = pwd.getpwnam("nobody")
        os.chown(root, user.pw_uid, user.pw_gid)
        as_user = ["runuser", "-u", "nobody", "--"]

    def run(*args: str) -> None:
        subprocess.run([*as_user, *args], check=True, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       timeout=120)

    try:
        run(str(bin_dir / "initdb"), "-D", str(data), "-U", "te", "--auth=trust", "-E", "UTF8", "--no-sync")
        options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
        run(str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(root / "log"), "-w", "start")
        run(str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "te", "classes")
        yield f"postgresql+psycopg://te@127.0.0.1:{port}/classes"
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run([*as_user, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                           cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60, check=False)
        shutil.rmtree(root, ignore_errors=True)
