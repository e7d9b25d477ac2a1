"""A class on two replicas: two real server processes (`transformer-explorer serve`, started together) on one
database, the teacher on replica A and three students on replica B, every page's live stream a real HTTP stream.
On PostgreSQL (TE_DATABASE_URL, as deploy/compose.yaml's replicas share it; a throwaway cluster, skipped with a
message where PostgreSQL is not installed) and on one SQLite file in a shared data folder (the zero-setup default,
as two processes of `serve --processes 2` share it). Both servers start on an empty database: each migrates it
at start-up, one after the other (an advisory lock, or SQLite's write lock)."""

from __future__ import annotations

import csv
import io
import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.classroom.servers import Stream, servers

STEP = {"chapter": "scale", "question": "unscaled_peak"}  # on tiny-gpt: "without ÷√d_k, up or down?"
STUDENTS = {"Ana": "up", "Bo": "down", "李雷": "down"}
# a change made on one replica reaches a stream on the other within live.POLL_S (0.5 s) plus a query; the bound
# leaves room for a loaded CI machine (bench/classroom.py measures the lag against the 1 s)
LIVE_S = 5.0


def fresh_database(cluster: str) -> str:
    """A new, empty database in the session's cluster (whatever tables other tests or migrations left in theirs),
    as deploy/compose.yaml names it: postgresql://..."""
    name = f"replicas_{secrets.token_hex(4)}"
    engine = create_engine(cluster, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(text(f"CREATE DATABASE {name}"))
    engine.dispose()
    return cluster.rsplit("/", 1)[0].replace("postgresql+psycopg://", "postgresql://") + "/" + name


@pytest.fixture(params=["sqlite", "postgresql"])
def replicas(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    """(replica A's URL, replica B's, the database's kind): two servers on one fresh database."""
    if request.param == "sqlite":  # the default: data/classes.sqlite in the data folder both processes share
        shared = tmp_path / "data"
        envs = [{"TE_DATA_DIR": str(shared)}] * 2
    else:  # each replica with a data folder of its own, the database in TE_DATABASE_URL
        url = fresh_database(request.getfixturevalue("postgres_url"))
        envs = [{"TE_DATABASE_URL": url, "TE_DATA_DIR": str(tmp_path / f"data-{i}")} for i in range(2)]
    with servers(envs, tmp_path / "logs") as (a, b):
        yield a, b, request.param


def test_a_class_across_two_replicas(replicas: tuple[str, str, str]) -> None:
    a, b, kind = replicas
    with httpx.Client(base_url=a, timeout=30) as teacher, httpx.Client(base_url=b, timeout=30) as on_b:
        started = teacher.post("/api/classes", json={"lang": "en"})
        assert started.status_code == 201, started.text
        code, key = started.json()["code"], started.json()["teacher_key"]
        teacher.headers["X-Class-Key"] = key
        asked = teacher.post(f"/api/classes/{code}/step", json=STEP)
        assert asked.status_code == 200, asked.text
        watch = Stream(f"{a}/api/classes/{code}/events?role=teacher", key)
        watch.start()
        watch.first(lambda name, s: name == "state" and s["question"] == STEP["question"], LIVE_S)

        # three students join and answer on B; the teacher's stream on A shows them
        tokens = {}
        for nickname in STUDENTS:
            joined = on_b.post(f"/api/classes/{code}/students", json={"nickname": nickname})
            assert joined.status_code == 201, joined.text
            tokens[nickname] = joined.json()["token"]
        page = Stream(f"{b}/api/classes/{code}/events", tokens["Ana"])
        page.start()
        first, _ = page.first(lambda name, s: name == "state", LIVE_S)
        assert first["question"] == STEP["question"] and not first["revealed"] and "distribution" not in first
        for nickname, value in STUDENTS.items():
            answered = on_b.post(f"/api/classes/{code}/answers", json={"value": value},
                                 headers={"X-Class-Key": tokens[nickname]})
            assert answered.status_code == 200, answered.text
        last_answer = time.perf_counter()
        seen, at = watch.first(lambda name, s: name == "state" and s["answered"] == 3, LIVE_S)
        print(f"\n{kind}: the teacher's stream on A showed B's 3 answers {(at - last_answer) * 1000:.0f} ms after the "
              "last one's 200")
        assert seen["students"] == 3
        assert {bar["value"]: bar["count"] for bar in seen["distribution"]} == {"up": 1, "down": 2}
        assert all(bar["correct"] is None for bar in seen["distribution"])  # not before the reveal

        # the right answer, as the lesson's own endpoint measures it (on B: either replica computes the same)
        lesson = on_b.get("/api/lessons/scale/questions",
                          params={"lang": "en", "question": STEP["question"], "answer": "down"}).json()
        right = lesson["questions"][0]["answer"]
        assert right in ("up", "down") and lesson["verdict"]["correct"] is (right == "down")

        # reveal on A: the student's stream on B shows it, with the distribution and which answer was right
        revealed = teacher.post(f"/api/classes/{code}/reveal")
        assert revealed.status_code == 200, revealed.text
        shown = time.perf_counter()
        view, at = page.first(lambda name, s: name == "state" and s["revealed"], LIVE_S)
        print(f"{kind}: the student's stream on B showed A's reveal {(at - shown) * 1000:.0f} ms after its 200")
        assert {bar["value"]: (bar["count"], bar["correct"]) for bar in view["distribution"]} == {
            value: (list(STUDENTS.values()).count(value), value == right) for value in ("up", "down")}
        mine = on_b.get(f"/api/classes/{code}/me", headers={"X-Class-Key": tokens["Bo"]}).json()["mine"]
        assert mine == {"value": "down", "correct": right == "down"}

        # the CSV from B with the teacher's key: every answer, checked on the lesson's numbers
        sheet = on_b.get(f"/api/classes/{code}/answers.csv", headers={"X-Class-Key": key})
        assert sheet.status_code == 200 and sheet.headers["content-type"].startswith("text/csv"), sheet.text
        rows = list(csv.DictReader(io.StringIO(sheet.content.decode("utf-8-sig"))))  # with Excel's BOM
        assert {(r["nickname"], r["chapter"], r["question"], r["answer"], r["correct"]) for r in rows} == {
            (n, STEP["chapter"], STEP["question"], v, str(v == right).lower()) for n, v in STUDENTS.items()}
        # a student's token is not the teacher's key, on either replica
        assert on_b.get(f"/api/classes/{code}/answers.csv", headers={"X-Class-Key": tokens["Ana"]}).status_code == 403

        # end on A: B no longer knows the class, and both streams are told
        assert teacher.post(f"/api/classes/{code}/end").status_code == 204
        ended = time.perf_counter()
        _, at = page.first(lambda name, s: name == "ended", LIVE_S)
        print(f"{kind}: the student's stream on B ended {(at - ended) * 1000:.0f} ms after A's end")
        watch.first(lambda name, s: name == "ended", LIVE_S)
        for method, path, who in [("GET", "", key), ("GET", "/answers.csv", key), ("GET", "/me", tokens["Ana"]),
                                  ("POST", "/answers", tokens["Bo"])]:
            gone = on_b.request(method, f"/api/classes/{code}{path}", headers={"X-Class-Key": who},
                                json={"value": "up"} if method == "POST" else None)
            assert gone.status_code == 404 and gone.json()["error"]["code"] == "unknown_class", gone.text
        for stream in (watch, page):
            stream.join(timeout=LIVE_S)
            assert not stream.is_alive() and stream.status == 200 and stream.error is None
