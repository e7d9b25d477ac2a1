"""The class API over HTTP, on SQLite and PostgreSQL: hostile clients get a clear 4xx and change nothing else in
the database (unknown and expired codes, a student on teacher routes, another class's ids, 10,000-character and
HTML nicknames, 1,000 joins from one client); live events; and two app instances sharing one database."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text

from app.catalogue import add_directory
from app.factory import create_app
from tests.app.conftest import make_registry, make_settings

TABLES = ("classes", "students", "answers")


WEIGHTS = Path(__file__).resolve().parents[2] / "model" / "weights"
STEP = {"chapter": "scale", "question": "unscaled_peak"}  # on tiny-gpt: "without ÷√d_k, up or down?"


def make_app(tmp: Path, url: str) -> Any:
    registry = make_registry()
    add_directory(registry, "tiny-gpt", WEIGHTS / "tiny-gpt", source="weights")  # the chapter's own model
    return create_app(make_settings(tmp, database_url=url, prefault_mb=0, workers=1), registry)


@pytest.fixture()
def app(database_url: str, tmp_path: Path) -> Iterator[Any]:
    application = make_app(tmp_path, database_url)
    with TestClient(application):  # the lifespan: the database migrated, the class service made
        yield application


def client(app: Any, host: str) -> TestClient:
    return TestClient(app, client=(host, 50000))  # a client of its own address (rate limits are per client)


def rows(url: str) -> dict[str, list[tuple[Any, ...]]]:
    engine = create_engine(url)
    with engine.connect() as connection:
        found = {t: sorted(map(tuple, connection.execute(text(f"SELECT * FROM {t}")).all()), key=str) for t in TABLES}
    engine.dispose()
    return found


def start(app: Any, host: str = "teacher") -> tuple[TestClient, str, str]:
    teacher = client(app, host)
    body = teacher.post("/api/classes", json={"lang": "en"}).json()
    return teacher, body["code"], body["teacher_key"]


def join(app: Any, code: str, nickname: str, host: str) -> tuple[TestClient, str]:
    student = client(app, host)
    response = student.post(f"/api/classes/{code}/students", json={"nickname": nickname})
    assert response.status_code == 201, response.text
    return student, response.json()["token"]


def error_of(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] == code and error["message"], error
    return error


def test_hostile_clients_change_nothing(app: Any, database_url: str) -> None:
    teacher, code, key = start(app)
    other_teacher, other_code, other_key = start(app, "other-teacher")
    student, token = join(app, code, "Ana", "ana")
    assert teacher.post(f"/api/classes/{code}/step", json=STEP).status_code == 200
    assert student.post(f"/api/classes/{code}/answers", json={"value": "up"}).status_code == 200
    before = rows(database_url)

    # a student on every teacher route: 403, with or without the student's own cookie
    for method, path in [("POST", "reveal"), ("GET", "answers.csv"), ("POST", "end"), ("GET", ""), ("GET", "qr.svg"),
                         ("POST", "step")]:
        response = student.request(method, f"/api/classes/{code}/{path}".rstrip("/"),
                                   json=STEP if path == "step" else None)
        error_of(response, 403, "not_teacher")
    # another class's teacher key, and a teacher key on another class's routes
    error_of(other_teacher.post(f"/api/classes/{code}/reveal", headers={"X-Class-Key": other_key}), 403, "not_teacher")
    error_of(teacher.post(f"/api/classes/{other_code}/reveal", headers={"X-Class-Key": key}), 403, "not_teacher")
    # a student's token used on another class
    error_of(client(app, "x").post(f"/api/classes/{other_code}/answers", json={"value": "up"},
                                   headers={"X-Class-Key": token}), 403, "not_student")
    # nicknames: 10,000 characters, markup
    long = error_of(client(app, "n1").post(f"/api/classes/{code}/students", json={"nickname": "x" * 10_000}),
                    422, "nickname_too_long")
    assert long["details"] == {"reason": "nickname_too_long", "limit": 24, "length": 10_000}
    error_of(client(app, "n2").post(f"/api/classes/{code}/students", json={"nickname": "<img src=x onerror=1>"}),
             422, "nickname_characters")
    # an answer of 10,000 characters, one the question does not take, a question the chapter has not
    error_of(student.post(f"/api/classes/{code}/answers", json={"value": "x" * 10_000}), 422, "answer_too_long")
    error_of(student.post(f"/api/classes/{code}/answers", json={"value": "sideways"}), 422, "invalid_answer")
    error_of(teacher.post(f"/api/classes/{code}/step", json={"chapter": "scale", "question": "nope"}), 404,
             "unknown_question")
    # unknown codes, then the guesser is stopped on every route
    guesser = client(app, "guesser")
    for guess in ["ZZZZZZ", "AAAAAA", "A-B-C-", "x" * 2000, "BCDEFG", "HJKMNP", "QRSTUV", "WXYZ23", "456789",
                  "22222A"]:
        error_of(guesser.post(f"/api/classes/{guess}/students", json={"nickname": "x"}), 404, "unknown_class")
    error_of(guesser.get(f"/api/classes/{code}/me"), 429, "too_many_attempts")
    error_of(guesser.post(f"/api/classes/{code}/answers", json={"value": "up"}), 429, "too_many_attempts")  # in a group
    error_of(guesser.post(f"/api/classes/{code}/students", json={"nickname": "x"}), 429, "too_many_attempts")
    assert rows(database_url) == before


def test_a_thousand_joins_from_one_client(app: Any, database_url: str) -> None:
    _, code, _ = start(app)
    _, other, _ = start(app, "other")
    flood = client(app, "flood")
    statuses = [flood.post(f"/api/classes/{code}/students", json={"nickname": f"bot{i}"}).status_code
                for i in range(1000)]
    assert statuses.count(201) == 60 and statuses.count(429) == 940  # 60 joins per client per 10 minutes
    error_of(flood.post(f"/api/classes/{code}/students", json={"nickname": "more"}), 429, "too_many_attempts")
    found = rows(database_url)
    assert len(found["students"]) == 60 and not found["answers"]
    assert all(row[1] == found["classes"][0][0] or row[1] == found["classes"][1][0] for row in found["students"])
    assert {row[1] for row in found["students"]} == {c[0] for c in found["classes"] if c[1] == code}
    assert client(app, "real").post(f"/api/classes/{other}/students", json={"nickname": "Ana"}).status_code == 201


def test_expired_code(database_url: str, tmp_path: Path) -> None:
    application = make_app(tmp_path, database_url)
    with TestClient(application):
        _, code, key = start(application)
        engine = create_engine(database_url)
        with engine.begin() as connection:  # a day later
            connection.execute(text("UPDATE classes SET expires_at = created_at"))
        engine.dispose()
        error_of(client(application, "s").post(f"/api/classes/{code}/students", json={"nickname": "Ana"}),
                 404, "unknown_class")
        error_of(client(application, "t").get(f"/api/classes/{code}", headers={"X-Class-Key": key}),
                 404, "unknown_class")


def events(stream: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    name = ""
    for line in stream.iter_lines():
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            yield name, json.loads(line[6:])


def test_two_replicas_share_one_class(database_url: str, tmp_path: Path) -> None:
    """A teacher on one app instance and a student on another, one database: the teacher's live view shows the
    student's answer (the stream polls the class's version row), and the student's stream sees the end."""
    one, two = make_app(tmp_path / "one", database_url), make_app(tmp_path / "two", database_url)
    with TestClient(one), TestClient(two):
        teacher, code, key = start(one)
        student, _ = join(two, code, "Ana", "ana")
        assert teacher.post(f"/api/classes/{code}/step", json=STEP).status_code == 200
        with teacher.stream("GET", f"/api/classes/{code}/events?role=teacher") as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            seen = events(stream)
            name, first = next(seen)
            assert (name, first["students"], first["answered"]) == ("state", 1, 0)
            assert student.post(f"/api/classes/{code}/answers", json={"value": "down"}).status_code == 200
            name, after = next(seen)
            assert after["answered"] == 1 and after["distribution"][0]["value"] == "down"
        # checked on the lesson's own numbers: the verdict is the lessons' endpoint's, not the page's
        lesson = teacher.get("/api/lessons/scale/questions?lang=en&question=unscaled_peak&answer=down").json()
        assert student.get(f"/api/classes/{code}/me").json()["mine"]["correct"] is None  # not before the reveal
        assert teacher.post(f"/api/classes/{code}/reveal").status_code == 200
        mine = student.get(f"/api/classes/{code}/me").json()
        assert mine["mine"]["correct"] is lesson["verdict"]["correct"]
        assert mine["asked"]["answer"] == lesson["questions"][0]["answer"] in ("up", "down")
        with student.stream("GET", f"/api/classes/{code}/events") as stream:
            seen = events(stream)
            name, view = next(seen)
            assert name == "state" and view["revealed"] and view["distribution"][0]["value"] == "down"
            assert teacher.post(f"/api/classes/{code}/end").status_code == 204
            assert next(seen)[0] == "ended"
