"""Real server processes for the class tests: `transformer-explorer serve` (the shipped models, no MiniLM or
SmolLM2, as bench/classroom.py starts it) on free loopback ports, several started at once, each with its own log;
and a page's live stream (server-sent events) read in a thread of its own."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
START_S = 180  # a server starts in about 4 s on a quiet machine; a loaded CI machine may take far longer


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def servers(envs: list[dict[str, str]], logs: Path) -> Iterator[list[str]]:
    """Start one server per environment, all together (each costs seconds: they load the models side by side),
    each with its `env` added to an environment cleared of TE_* variables; yield their base URLs; stop them
    (SIGTERM, then SIGKILL)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TE_")}
    ports = [_free_port() for _ in envs]
    logs.mkdir(parents=True, exist_ok=True)
    started: list[tuple[subprocess.Popen[bytes], Path]] = []
    try:
        for i, (port, env) in enumerate(zip(ports, envs, strict=True)):
            log = logs / f"server-{i}.log"
            command = [sys.executable, "-m", "transformer_explorer", "serve", "--port", str(port), "--no-minilm",
                       "--no-smollm2", "--log-level", "warning"]
            with log.open("wb") as out:
                started.append((subprocess.Popen(command, cwd=ROOT, env={**clean, **env}, stdout=out,
                                                 stderr=subprocess.STDOUT, start_new_session=True), log))
        deadline = time.monotonic() + START_S
        for (server, log), port in zip(started, ports, strict=True):
            while not _healthy(port):
                if server.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"server on port {port} did not start:\n{log.read_text(errors='replace')}")
                time.sleep(0.1)
        yield [f"http://127.0.0.1:{port}" for port in ports]
    finally:
        for server, _ in started:
            if server.poll() is None:
                os.killpg(server.pid, signal.SIGTERM)
        for server, _ in started:
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()


def _healthy(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


class Stream(threading.Thread):
    """A page's live stream: every event (name, data, when it came) as it arrives, until the server ends it or
    the test closes it. One connection, no reconnecting: a drop is a failure the test sees."""

    def __init__(self, url: str, key: str) -> None:
        super().__init__(daemon=True)
        self.url, self.key = url, key
        self.events: list[tuple[str, dict[str, Any], float]] = []
        self.status: int | None = None
        self.error: str | None = None
        self.closed = False
        self._changed = threading.Condition()

    def run(self) -> None:
        try:
            with httpx.stream("GET", self.url, headers={"X-Class-Key": self.key},
                              timeout=httpx.Timeout(10, read=60)) as response:
                self.status = response.status_code
                name = ""
                for line in response.iter_lines():
                    if self.closed:
                        return
                    if line.startswith("event: "):
                        name = line[7:]
                    elif line.startswith("data: "):
                        with self._changed:
                            self.events.append((name, json.loads(line[6:]), time.perf_counter()))
                            self._changed.notify_all()
        except httpx.HTTPError as error:
            self.error = repr(error)
        finally:
            with self._changed:
                self.closed = True
                self._changed.notify_all()

    def first(self, test: Callable[[str, dict[str, Any]], bool], timeout: float) -> tuple[dict[str, Any], float]:
        """The first event passing `test` (its data and when it came), waiting at most `timeout` seconds."""
        deadline = time.perf_counter() + timeout
        with self._changed:
            while True:
                for name, data, at in self.events:
                    if test(name, data):
                        return data, at
                left = deadline - time.perf_counter()
                if left <= 0 or self.closed:
                    raise AssertionError(f"no such event within {timeout} s from {self.url} (status {self.status}, "
                                         f"error {self.error}); seen: {[(n, d) for n, d, _ in self.events]}")
                self._changed.wait(left)
