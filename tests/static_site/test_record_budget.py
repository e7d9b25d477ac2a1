"""The recorder keeps a larger model's stepper only while the recording stays within LARGE_STEPPERS_BYTES."""

from __future__ import annotations

import pytest

from static_site import record
from static_site.record import Recorder, Recording


def recorder_with(answers: dict[str, bytes]) -> Recorder:
    """A Recorder without a browser: keep_within_budget only reads and edits the recording."""
    recorder = Recorder.__new__(Recorder)
    recorder.recording = Recording(answers=dict(answers))
    recorder.largest_stepper = 0
    return recorder


def test_a_stepper_that_fits_is_kept_and_sets_the_estimate(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(record, "LARGE_STEPPERS_BYTES", 100)
    recorder = recorder_with({"view": b"x" * 30})
    before = dict.fromkeys(recorder.recording.answers)
    recorder.recording.answers.update({"step 1": b"y" * 20, "step 2": b"y" * 20})
    walked = ["stepper"]
    recorder.keep_within_budget(before, walked)
    assert set(recorder.recording.answers) == {"view", "step 1", "step 2"}
    assert recorder.largest_stepper == 40 and recorder.recorded_bytes() == 70
    assert "dropped" not in walked[-1]


def test_a_stepper_over_the_budget_is_dropped_and_the_rest_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(record, "LARGE_STEPPERS_BYTES", 100)
    recorder = recorder_with({"view": b"x" * 30, "shared": b"z" * 10})
    before = dict.fromkeys(recorder.recording.answers)
    recorder.recording.answers.update({"shared": b"z" * 10, "step 1": b"y" * 50, "step 2": b"y" * 50})
    walked = ["stepper"]
    recorder.keep_within_budget(before, walked)
    assert recorder.recording.answers == {"view": b"x" * 30, "shared": b"z" * 10}  # what was there before stays
    assert recorder.largest_stepper == 0
    assert walked[-1].endswith("dropped (the site's budget)")
