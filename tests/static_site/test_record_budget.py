"""A stepper that would take the recorded answers' files over ANSWERS_BYTES is dropped again; what came before
stays. The size counted is the data files' as export.py writes them (a quote in an answer takes two bytes there)."""

from __future__ import annotations

import pytest

from static_site import record
from static_site.data_files import data_text
from static_site.record import Recorder, Recording


def recorder_with(answers: dict[str, bytes]) -> Recorder:
    """A Recorder without a browser: keep_within_budget only reads and edits the recording."""
    recorder = Recorder.__new__(Recorder)
    recorder.recording = Recording(answers=dict(answers))
    return recorder


def test_the_size_is_the_written_files() -> None:
    answer = '{"a": "我"}'.encode()
    recorder = recorder_with({"view": answer, "step": b"y" * 10})
    assert recorder.recorded_bytes() == len(data_text("view", answer)) + len(data_text("step", b"y" * 10))
    assert '{\\"a\\": \\"\\u6211\\"}' in data_text("view", answer)  # quotes escaped, 我 written as \u6211


def test_a_stepper_that_fits_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = recorder_with({"view": b"x" * 30})
    before = dict.fromkeys(recorder.recording.answers)
    recorder.recording.answers.update({"step 1": b"y" * 35, "step 2": b"y" * 35})
    monkeypatch.setattr(record, "ANSWERS_BYTES", recorder.recorded_bytes())
    assert recorder.keep_within_budget(before, "stepper") == "stepper"
    assert set(recorder.recording.answers) == {"view", "step 1", "step 2"}


def test_a_stepper_over_the_budget_is_dropped_and_the_rest_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = recorder_with({"view": b"x" * 30, "shared": b"z" * 10})
    monkeypatch.setattr(record, "ANSWERS_BYTES", recorder.recorded_bytes() + 50)
    before = dict.fromkeys(recorder.recording.answers)
    recorder.recording.answers.update({"shared": b"z" * 10, "step 1": b"y" * 50, "step 2": b"y" * 50})
    walked = recorder.keep_within_budget(before, "stepper")
    assert recorder.recording.answers == {"view": b"x" * 30, "shared": b"z" * 10}  # what was there before stays
    assert walked == "stepper: dropped (the site's budget)"
