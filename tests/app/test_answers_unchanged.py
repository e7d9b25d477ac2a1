"""Every endpoint answers a fixed set of requests byte for byte as recorded (tests/app/record_answers.py).

A change meant to alter answers re-records: `PYTHONPATH=. python -m tests.app.record_answers`.
"""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from tests.app.record_answers import FIXTURE, REQUESTS, digests, label


def test_the_fixture_covers_the_requests() -> None:
    recorded = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert set(recorded) == {label(*r) for r in REQUESTS}, "re-record: python -m tests.app.record_answers"


def test_answers_are_byte_identical_to_the_recorded_ones(client: TestClient) -> None:
    recorded = json.loads(FIXTURE.read_text(encoding="utf-8"))
    found = digests(client)
    changed = [name for name, digest in found.items() if recorded.get(name) != digest]
    assert not changed, changed
