"""One writer per process that commits queued answers in groups: 60 students answering in the same second become a
few transactions, not 60 writers queueing for the database's write lock.

Why: every write takes the database's write lock (SQLite: the whole file; PostgreSQL: the class row), so concurrent
answers run one at a time anyway. Sixty threads each asking for the lock made SQLite's busy handler sleep with
back-off (up to 100 ms a try) while the lock was free, and each paid a transaction and its commit. Here the
requests hand their answer to one thread and wait; it takes everything queued, applies it in one transaction
(`apply`, in service order), commits once, and only then tells each request its own outcome, so an answer is
committed before its 200 is sent. While a group commits, the next one queues.

A refusal (ClassError) belongs to its own request and changes nothing of the others'. Any other failure rolls
the group back and its requests are retried one by one, so one request's fault is never another's error, except
a failure of the database itself (`fails_all`: unreachable, or locked past its busy timeout), which every
request of the group is told at once: retried one by one, each would wait out the same timeout again.
The thread starts on the first answer and ends after IDLE_S without one (a test's Classroom leaves no thread).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

IDLE_S = 5.0  # the writer thread ends after this long without a request (the next one starts it again)
GROUP_MAX = 256  # the most requests one transaction applies (a class holds at most a few hundred students)


@dataclass
class Job:
    """One request's write: what to write, and the future its request waits on (a value or an exception)."""

    args: tuple[Any, ...]
    done: Future[Any] = field(default_factory=Future)


# apply(args of each job) writes a group in one transaction and commits it; it returns, per job, either its value
# or the exception (a ClassError) it was refused with, a refusal having written nothing
Apply = Callable[[list[tuple[Any, ...]]], list[Any]]


class GroupWriter:
    def __init__(self, apply: Apply, name: str, fails_all: tuple[type[BaseException], ...] = ()) -> None:
        self.apply, self.name, self.fails_all = apply, name, fails_all
        self.jobs: queue.SimpleQueue[Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._running = False

    def submit(self, *args: Any) -> Any:
        """Queue one write and wait until its group is committed: its value, or its exception raised here."""
        job = Job(args)
        with self._lock:
            self.jobs.put(job)
            if not self._running:
                self._running = True
                threading.Thread(target=self._run, name=self.name, daemon=True).start()
        return job.done.result()

    def _run(self) -> None:
        while True:
            try:
                first = self.jobs.get(timeout=IDLE_S)
            except queue.Empty:
                with self._lock:  # submit() puts under this lock: a job queued now is seen, or a new thread starts
                    if self.jobs.empty():
                        self._running = False
                        return
                continue
            group = [first]
            while len(group) < GROUP_MAX:
                try:
                    group.append(self.jobs.get_nowait())
                except queue.Empty:
                    break
            self._write(group)

    def _write(self, group: list[Job]) -> None:
        try:
            outcomes = self.apply([job.args for job in group])
        except BaseException as error:  # noqa: BLE001 - rolled back: each request is tried alone, or told
            if len(group) > 1 and not isinstance(error, self.fails_all):
                for job in group:
                    self._write([job])
                return
            for job in group:
                job.done.set_exception(error)
            return
        for job, outcome in zip(group, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                job.done.set_exception(outcome)
            else:
                job.done.set_result(outcome)
