"""Every endpoint answers a fixed set of requests as recorded (tests/app/record_answers.py), on any CPU.

Answers without floats must be the same bytes; answers with floats the same structure and every float within
the stated tolerance (record_answers.TOLERANCE), because another CPU's kernels move the last bits. The
comparison runs twice: in this process, with the kernels torch picks for this machine, and in a child process
with ATEN_CPU_CAPABILITY=default (no vector extensions), so that an answer that only holds on the machine that
recorded it fails here too.

A change meant to alter answers re-records: `PYTHONPATH=. python -m tests.app.record_answers`.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.app.record_answers import FIXTURE, REQUESTS, answers, changed_answers, differences, label

ROOT = Path(__file__).resolve().parents[2]


def recorded() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def test_the_fixture_covers_the_requests() -> None:
    assert set(recorded()) == {label(*r) for r in REQUESTS}, "re-record: python -m tests.app.record_answers"


def test_answers_are_the_recorded_ones_with_this_machines_kernels(client: TestClient) -> None:
    changed = changed_answers(recorded(), answers(client))
    assert not changed, json.dumps(changed, ensure_ascii=False, indent=1)


def test_answers_are_the_recorded_ones_with_the_default_kernels() -> None:
    env = {**os.environ, "ATEN_CPU_CAPABILITY": "default", "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-m", "tests.app.record_answers", "--check"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert run.stdout.strip().endswith("all answers unchanged")


# --- the comparison can fail: each kind of change it must see -----------------------------------------------

def _one(name: str) -> dict[str, Any]:
    return copy.deepcopy(recorded()[name])


TRACE = label("POST", "/api/trace", {"model": "gpt", "text": "the cat sat on",
                                     "stages": ["hook_logits", "blocks.0.attn.hook_pattern"]})


def test_a_float_moved_in_its_third_significant_digit_is_a_change() -> None:
    rec = _one(TRACE)
    got = copy.deepcopy(rec)
    row = got["body"]["stages"]["blocks.0.attn.hook_pattern"]["data"][0][3]
    cell = max(range(len(row)), key=lambda i: abs(row[i] or 0))
    row[cell] *= 1.01
    assert differences(rec["body"], got["body"])
    row[cell] = rec["body"]["stages"]["blocks.0.attn.hook_pattern"]["data"][0][3][cell]
    assert not differences(rec["body"], got["body"])


def test_a_rounding_flip_in_the_last_written_digit_is_not_a_change() -> None:
    rec = {"data": [[0.1234, -0.5, 12.34], [0.0007249, 3.6e-07, 1.0]]}
    got = {"data": [[0.1235, -0.5, 12.35], [0.000725, 9.1e-07, 1.0]]}
    assert not differences(rec, got)


def test_base64_tensors_are_decoded_and_compared() -> None:
    name = label("POST", "/api/trace", {"model": "gpt", "text": "the cat sat on", "stages":
                                        ["blocks.1.attn.hook_pattern"], "encoding": "base64"})
    rec = _one(name)
    got = copy.deepcopy(rec)
    spec = got["body"]["stages"]["blocks.1.attn.hook_pattern"]["data"]
    raw = bytearray(base64.b64decode(spec["bdata"]))
    raw[6], raw[7] = 0x00, 0x3F  # the second value becomes 0.5
    spec["bdata"] = base64.b64encode(bytes(raw)).decode()
    assert differences(rec["body"], got["body"])


@pytest.mark.parametrize(("before", "after", "same"), [
    ("entropy 0.9134 nats", "entropy 0.9135 nats", True),
    ("entropy 0.9134 nats", "entropy 0.9634 nats", False),
    ("layer 2, head 3", "layer 2, head 4", False),
    ("agrees to 3.1e-16", "agrees to 7.9e-16", True),
])
def test_numbers_in_sentences_are_compared_as_numbers(before: str, after: str, same: bool) -> None:
    assert (not differences(before, after)) is same


def test_structure_integers_and_float_free_bytes_are_exact() -> None:
    assert differences({"a": [1, 2]}, {"a": [1, 2, 3]})
    assert differences({"a": 1}, {"b": 1})
    assert differences({"ids": [256, 116]}, {"ids": [256, 117]})
    assert differences({"masked": [None, 0.5]}, {"masked": [0.0, 0.5]})
    health = label("POST", "/api/tokenize", {"model": "gpt", "text": "the cat sat on"})
    rec = _one(health)
    assert not rec["floats"]
    got = {**rec, "sha256": "0" * 64}
    assert changed_answers({health: rec}, {health: got})
