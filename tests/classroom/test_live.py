"""classroom.live.Watcher: a stream sends the state, a heartbeat while nothing changes (and keeps going after
it), the new state when the version row moves, and `ended` when the class is gone; bounded per class."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from classroom import live
from classroom.errors import ClassError


async def past_heartbeats(stream: Any) -> bytes:
    """The stream's next event that is not a heartbeat."""
    while (event := await stream.__anext__()) == b": heartbeat\n\n":
        pass
    return event


def test_a_stream_follows_the_version_row(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live, "HEARTBEAT_S", 0.2)
    monkeypatch.setattr(live, "POLL_S", 0.02)
    versions = {"ABCDEF": 1}
    reads = []

    def view() -> dict[str, int]:
        reads.append(versions["ABCDEF"])
        return {"version": versions["ABCDEF"]}

    async def run() -> list[bytes]:
        watcher = live.Watcher(lambda codes: {c: versions[c] for c in codes if c in versions}, per_class=2,
                               per_process=10)
        watcher.open("ABCDEF")
        watcher.open("ABCDEF")
        with pytest.raises(ClassError) as full:
            watcher.open("ABCDEF")
        assert full.value.code == "too_many_streams"
        watcher.close("ABCDEF")
        stream = watcher.stream("ABCDEF", True, view)
        got = [await stream.__anext__(), await stream.__anext__()]  # retry, the state now
        got += [await stream.__anext__(), await stream.__anext__()]  # two heartbeats: the wait goes on after one
        versions["ABCDEF"] = 2
        got.append(await past_heartbeats(stream))  # a slow machine may beat once more before the poll sees it
        del versions["ABCDEF"]  # ended (or expired)
        got.append(await past_heartbeats(stream))
        await stream.aclose()
        assert watcher.watching == {}
        return got

    # a loop of its own in a thread of its own: a test earlier in the suite may leave this thread's loop running
    with ThreadPoolExecutor(1) as thread:
        got = thread.submit(asyncio.run, run()).result(timeout=60)
    assert got[0] == b"retry: 1000\n\n"
    assert got[1].startswith(b"event: state\n") and json.loads(got[1].split(b"data: ")[1]) == {"version": 1}
    assert got[2] == got[3] == b": heartbeat\n\n"
    assert json.loads(got[4].split(b"data: ")[1]) == {"version": 2}
    assert got[5] == b"event: ended\ndata: {}\n\n"
