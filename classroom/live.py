"""What a live stream waits on: one poller per server process reads the version row of every class someone is
watching (one query every POLL_S for all of them) and wakes the streams of a class whose version moved. The
version lives in the database, so a change made through any replica reaches the pages served by every other.

A stream is an async generator on the event loop (no thread held while it waits); the poller makes one hop to
a thread per poll. Streams are bounded per class and per process (`Watcher.open` refuses past them).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from classroom import errors

POLL_S = 0.5  # the teacher's view is at most this (plus a query) behind an answer
HEARTBEAT_S = 15.0  # a comment line this often keeps proxies (nginx: 60 s) from closing an idle stream
RETRY_MS = 1000  # EventSource waits this long before it reconnects by itself


class Watcher:
    def __init__(self, versions: Callable[[list[str]], dict[str, int]], per_class: int, per_process: int) -> None:
        self.versions, self.per_class, self.per_process = versions, per_class, per_process
        self.watching: dict[str, int] = {}  # code -> streams open in this process
        self.seen: dict[str, int] = {}  # code -> last version read (-1: ended)
        # code -> one Event per open stream, set when the class's version moves (an Event, not a Condition:
        # asyncio.wait_for on Condition.wait can leave the lock released after a time-out, Python 3.11)
        self.wakers: dict[str, set[asyncio.Event]] = {}
        # (code, teacher) -> the version and the view read for it: one query per change for all of a class's pages
        self.views: dict[tuple[str, bool], tuple[int | None, asyncio.Future[dict[str, Any]]]] = {}
        self.task: asyncio.Task[None] | None = None

    def open(self, code: str) -> None:
        if sum(self.watching.values()) >= self.per_process:
            raise errors.too_many("streams", self.per_process)
        if self.watching.get(code, 0) >= self.per_class:
            raise errors.too_many("streams", self.per_class)
        self.watching[code] = self.watching.get(code, 0) + 1
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(self._poll())

    def close(self, code: str) -> None:
        left = self.watching.get(code, 0) - 1
        if left > 0:
            self.watching[code] = left
        else:
            self.watching.pop(code, None)
            self.seen.pop(code, None)
            self.wakers.pop(code, None)
            self.views.pop((code, True), None)
            self.views.pop((code, False), None)

    async def _poll(self) -> None:
        while self.watching:
            codes = list(self.watching)
            try:
                found = await asyncio.to_thread(self.versions, codes)
            except Exception:  # the database restarting: the streams keep their last state and we try again
                found = None
            if found is not None:
                for code in codes:
                    version = found.get(code, -1)
                    if self.seen.get(code) != version:
                        self.seen[code] = version
                        for waker in self.wakers.get(code, ()):
                            waker.set()
            await asyncio.sleep(POLL_S)

    async def _view(self, code: str, teacher: bool, version: int | None,
                    view: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        cached = self.views.get((code, teacher))
        if cached is None or cached[0] != version or version is None:
            cached = (version, asyncio.ensure_future(asyncio.to_thread(view)))
            self.views[(code, teacher)] = cached
        return await asyncio.shield(cached[1])  # one page leaving does not cancel the others' read

    async def stream(self, code: str, teacher: bool, view: Callable[[], dict[str, Any]]) -> AsyncIterator[bytes]:
        """Server-sent events: `retry`, the class's view now (a reconnect resumes from the state, not a log of
        events), then a view each time the version moves, a heartbeat comment when nothing does, and an `ended`
        event when the class ends or expires. The caller has open()ed `code`; this closes it."""
        waker = asyncio.Event()
        self.wakers.setdefault(code, set()).add(waker)
        try:
            yield f"retry: {RETRY_MS}\n\n".encode()
            sent = None
            while True:
                version = self.seen.get(code)
                if version == -1:
                    yield b"event: ended\ndata: {}\n\n"
                    return
                if version != sent:
                    try:
                        data = await self._view(code, teacher, version, view)
                    except errors.ClassError:
                        yield b"event: ended\ndata: {}\n\n"
                        return
                    sent = version if version is not None else data["version"]
                    yield _event("state", data)
                try:
                    await asyncio.wait_for(waker.wait(), HEARTBEAT_S)
                    waker.clear()
                except asyncio.TimeoutError:
                    yield b": heartbeat\n\n"
        finally:
            self.wakers.get(code, set()).discard(waker)
            self.close(code)


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False, separators=(',', ':'))}\n\n".encode()
