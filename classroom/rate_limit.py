"""Attempts per client in a sliding window, in this process's memory (bounded): joins and failed codes.

Per process, not per database: with N replicas a client gets N times the attempts, still far too few to find a
class among 887 million codes in a day. Memory stays bounded: at most MAX_CLIENTS clients are tracked, the
oldest forgotten first.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque

MAX_CLIENTS = 10_000


class SlidingWindow:
    def __init__(self, limit: int, window_s: float) -> None:
        self.limit, self.window_s = limit, window_s
        self._seen: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def wait_s(self, client: str, now: float | None = None) -> int:
        """0 when `client` may try now, else the whole seconds until its oldest attempt leaves the window."""
        now = time.monotonic() if now is None else now
        with self._lock:
            times = self._seen.get(client)
            if times is None:
                return 0
            while times and times[0] <= now - self.window_s:
                times.popleft()
            return 0 if len(times) < self.limit else int(times[0] + self.window_s - now) + 1

    def count(self, client: str, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        with self._lock:
            times = self._seen.pop(client, None) or deque()
            times.append(now)
            while len(times) > self.limit:
                times.popleft()
            self._seen[client] = times  # most recent last
            while len(self._seen) > MAX_CLIENTS:
                self._seen.popitem(last=False)
