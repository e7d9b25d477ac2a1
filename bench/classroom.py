"""A class session on one laptop: 60 students answering within the same second, and the server killed mid-question.

    python bench/classroom.py [--students 60] [--rounds 3] [--database-url postgresql://...]
                              [--baseline DIR [--baseline-database-url postgresql://...]] [--burst-only]

Starts `transformer-explorer serve` (shipped models, no minilm/smollm2) on a free loopback port with the class
database in a temporary folder (SQLite), or the database named by --database-url, and runs:

- **burst** (`--rounds` times): a teacher starts a class and asks chapter "scale"'s question; `--students`
  students join, each from its own loopback address (127.0.0.k: a device of its own, as the rate limits see
  it), then answer at the same instant. Each student's thread opens its HTTP connection first (raw
  http.client, no client library), all wait at a barrier, and each sends one POST: a latency is from that
  send to its response, so it measures the server, not connection set-up or a client library's work on the
  same cores. Prints per round the answers' statuses, p50/p95/max latency (goal: p95 <= 300 ms), how long
  after the last answer's 200 the teacher's live view (server-sent events) showed them all (goal: <= 1 s),
  the answers the database holds (goal: every one), and the load average of the machine when the round began.
- **side by side** (`--baseline DIR`): DIR is another checkout (e.g. `git archive <commit> | tar -x -C DIR`);
  its server runs too, on a database of its own, and the rounds alternate between the two servers so both
  see the same load.
- **SIGKILL** (unless `--burst-only`): the teacher asks chapter "qkv"'s question; half the students answer; the
  server is killed with SIGKILL while the teacher's and five students' live streams are open, and started again
  on the same database. Prints the answers still there (goal: every committed one), how long each stream took
  to come back by reconnecting as EventSource does (the server's `retry:`), and then the other half answer.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(port: int, env: dict[str, str], root: Path = ROOT) -> subprocess.Popen[bytes]:
    """The server of the checkout at `root` (its own code first on the path), once it answers /api/health."""
    command = [sys.executable, "-m", "transformer_explorer", "serve", "--port", str(port), "--no-minilm",
               "--no-smollm2", "--log-level", "warning"]
    server = subprocess.Popen(command, cwd=root, env={**env, "PYTHONPATH": str(root)}, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=2).status_code == 200:
                return server
        except httpx.HTTPError:
            time.sleep(0.2)
    os.killpg(server.pid, signal.SIGKILL)
    raise RuntimeError("the server did not start")


class Stream(threading.Thread):
    """A live page: reads the class's events, and reconnects as EventSource does (after `retry:` ms) when the
    connection drops, until stopped. Records when each `state` arrived and each reconnection."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        super().__init__(daemon=True)
        self.url, self.headers = url, headers
        self.states: list[tuple[float, dict[str, Any]]] = []
        self.dropped: float | None = None
        self.reconnected_after: list[float] = []
        self.retry_s = 1.0
        self.stop = False

    def run(self) -> None:
        while not self.stop:
            try:
                with httpx.stream("GET", self.url, headers=self.headers, timeout=httpx.Timeout(5, read=30)) as r:
                    if r.status_code != 200:
                        raise httpx.HTTPError(f"HTTP {r.status_code}")
                    for line in r.iter_lines():
                        if self.stop:
                            return
                        if line.startswith("retry: "):
                            self.retry_s = int(line[7:]) / 1000
                        elif line.startswith("data: "):
                            now = time.perf_counter()
                            if self.dropped is not None:
                                self.reconnected_after.append(now - self.dropped)
                                self.dropped = None
                            self.states.append((now, json.loads(line[6:])))
            except httpx.HTTPError:
                pass
            if self.dropped is None:
                self.dropped = time.perf_counter()
            time.sleep(self.retry_s)

    def first(self, test: Any, timeout: float = 10) -> float | None:
        """When a state passing `test` arrived (perf_counter), waiting up to `timeout` seconds."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            for at, state in list(self.states):
                if test(state):
                    return at
            time.sleep(0.01)
        return None


def address(i: int) -> str:
    """Student i's loopback address: 127.0.0.2 onwards (the teacher is 127.0.0.1)."""
    return f"127.0.{i // 250}.{2 + i % 250}"


class Client:
    """One keep-alive HTTP/1.1 connection from a loopback address of its own."""

    def __init__(self, port: int, source: str = "127.0.0.1") -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=(source, 0))
        self.connection.connect()

    def call(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
             ) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        sent = {"Content-Type": "application/json"} if data is not None else {}
        self.connection.request(method, path, body=data, headers={**sent, **(headers or {})})
        response = self.connection.getresponse()
        text = response.read()
        kind = response.getheader("content-type") or ""
        return response.status, json.loads(text) if kind.startswith("application/json") and text else text

    def close(self) -> None:
        self.connection.close()


def answer_all(port: int, code: str, tokens: list[str], value: str) -> list[tuple[int, float, float]]:
    """Every student answers at the same instant: (status, latency s, when the 200 came back)."""
    barrier = threading.Barrier(len(tokens))
    results: list[tuple[int, float, float]] = [(0, 0.0, 0.0)] * len(tokens)
    body = {"value": value}

    def one(i: int, token: str) -> None:
        client = Client(port, address(i))  # connected before the barrier: the latency is the request's alone
        barrier.wait()
        start = time.perf_counter()
        try:
            status = client.call("POST", f"/api/classes/{code}/answers", body, {"X-Class-Key": token})[0]
        except (OSError, http.client.HTTPException):
            status = 0
        end = time.perf_counter()
        client.close()
        results[i] = (status, end - start, end)

    threads = [threading.Thread(target=one, args=(i, t)) for i, t in enumerate(tokens)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


@dataclass
class Server:
    label: str
    root: Path
    env: dict[str, str]
    port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system, every thread) the process has used: what a burst costs the server, a figure
    the machine's other load barely moves, unlike the latencies."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load() -> str:
    return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def new_class(server: Server, students: int, question: tuple[str, str]) -> tuple[str, str, list[str]]:
    """A class started by the teacher (127.0.0.1), `students` joined each from its own address, and asked."""
    teacher = Client(server.port)
    status, started = teacher.call("POST", "/api/classes", {"lang": "en"})
    assert status == 201, started
    code, key = started["code"], started["teacher_key"]
    tokens = []
    for i in range(students):
        student = Client(server.port, address(i))
        status, joined = student.call("POST", f"/api/classes/{code}/students", {"nickname": f"S{i}"})
        student.close()
        assert status == 201, joined
        tokens.append(joined["token"])
    teacher.close()
    teacher = Client(server.port)  # a new connection: the joins may outlast the server's keep-alive (5 s)
    status, asked = teacher.call("POST", f"/api/classes/{code}/step", {"chapter": question[0], "question": question[1]},
                                 {"X-Class-Key": key})
    assert status == 200, asked
    teacher.close()
    return code, key, tokens


def burst(server: Server, students: int, round_: int) -> float:
    """One round: a fresh class, every student answers at once; prints the figures, returns the p95 (ms)."""
    code, key, tokens = new_class(server, students, ("scale", "unscaled_peak"))
    watch = Stream(f"{server.base}/api/classes/{code}/events?role=teacher", {"X-Class-Key": key})
    watch.start()
    assert watch.first(lambda s: s["question"] == "unscaled_peak") is not None
    before = load()
    assert server.process is not None
    cpu = cpu_s(server.process.pid)
    results = answer_all(server.port, code, tokens, "up")
    cpu = cpu_s(server.process.pid) - cpu
    statuses = [status for status, _, _ in results]
    latencies = [latency * 1000 for _, latency, _ in results]
    ok = [end for status, _, end in results if status == 200]
    seen = watch.first(lambda s: s["answered"] == students)
    watch.stop = True
    teacher = Client(server.port)
    stored = teacher.call("GET", f"/api/classes/{code}", headers={"X-Class-Key": key})[1]["answered"]
    teacher.call("POST", f"/api/classes/{code}/end", headers={"X-Class-Key": key})
    teacher.close()
    p95 = percentile(latencies, 0.95)
    # after the last 200 as this client read it: a view that came first (a few ms) shows as negative
    lag = "never" if seen is None or not ok else f"{(seen - max(ok)) * 1000:+.0f} ms"
    others = sorted(set(statuses) - {200})
    print(f"{server.label:>8} round {round_}: {statuses.count(200)} x 200{f' (others: {others})' if others else ''}, "
          f"p50 {statistics.median(latencies):.0f} ms, p95 {p95:.0f} ms, max {max(latencies):.0f} ms; "
          f"server CPU {cpu * 1000 / students:.1f} ms/answer; teacher's view {lag}; stored {stored}/{students}; "
          f"{before}", flush=True)
    return p95


def sigkill(server: Server, students: int) -> None:
    print("\n== SIGKILL in the middle of a question")
    code, key, tokens = new_class(server, students, ("qkv", "q_numbers"))
    teacher = httpx.Client(base_url=server.base, headers={"X-Class-Key": key}, timeout=60)
    watch = Stream(f"{server.base}/api/classes/{code}/events?role=teacher", {"X-Class-Key": key})
    pages = [Stream(f"{server.base}/api/classes/{code}/events", {"X-Class-Key": t}) for t in tokens[:5]]
    for stream in (watch, *pages):
        stream.start()
    assert watch.first(lambda s: s["question"] == "q_numbers") is not None
    half = students // 2
    first_half = answer_all(server.port, code, tokens[:half], "768")
    committed = sum(1 for status, _, _ in first_half if status == 200)
    assert server.process is not None
    os.killpg(server.process.pid, signal.SIGKILL)
    server.process.wait()
    killed = time.perf_counter()
    print(f"{committed} answers committed (200), then SIGKILL")
    server.process = start_server(server.port, server.env, server.root)
    print(f"server back after {time.perf_counter() - killed:.1f} s (models loaded again)")
    kept = teacher.get(f"/api/classes/{code}").json()["answered"]
    print(f"answers still stored: {kept} of {committed} committed (goal: all)")
    for stream in (watch, *pages):
        deadline = time.perf_counter() + 15
        while not stream.reconnected_after and time.perf_counter() < deadline:
            time.sleep(0.05)
    back = [s.reconnected_after[0] for s in (watch, *pages) if s.reconnected_after]
    print(f"live streams reconnected by themselves: {len(back)} of {1 + len(pages)}, "
          f"{max(back) if back else float('nan'):.1f} s at most after the drop (including the restart)")
    second_half = answer_all(server.port, code, tokens[half:], "700")
    final = teacher.get(f"/api/classes/{code}").json()["answered"]
    print(f"the other {len(tokens) - half} answered: {sum(1 for s, _, _ in second_half if s == 200)} x 200; "
          f"the question now holds {final} answers (goal: {students})")
    for stream in (watch, *pages):
        stream.stop = True
    teacher.post(f"/api/classes/{code}/end")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--students", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=3, help="bursts per server (each a fresh class)")
    parser.add_argument("--database-url", help="PostgreSQL (default: SQLite in a temporary folder)")
    parser.add_argument("--baseline", type=Path, help="another checkout, run side by side (e.g. main before a change)")
    parser.add_argument("--baseline-database-url", help="the baseline's PostgreSQL (a database of its own)")
    parser.add_argument("--burst-only", action="store_true", help="skip the SIGKILL part")
    args = parser.parse_args()
    servers = [Server("this", ROOT, {}, free_port())]
    if args.baseline:
        servers.insert(0, Server("baseline", args.baseline.resolve(), {}, free_port()))
    for server, url in zip(servers[::-1], (args.database_url, args.baseline_database_url), strict=False):
        data = Path(tempfile.mkdtemp(prefix="te-classroom-"))
        server.env = {**os.environ, "TE_DATA_DIR": str(data), "TE_CLASS_MAX_STUDENTS": str(max(100, args.students))}
        if url:
            server.env["TE_DATABASE_URL"] = url
        print(f"{server.label}: {server.root} on {server.base}, database: {url or data / 'classes.sqlite'}")
    print(f"{os.cpu_count()} cores; {load()}")
    try:
        for server in servers:
            server.process = start_server(server.port, server.env, server.root)
        print(f"\n== burst: {args.students} students answer at the same instant, {args.rounds} rounds"
              f"{' alternating' if len(servers) > 1 else ''} (goal: p95 <= 300 ms, teacher's view <= 1 s)")
        p95s: dict[str, list[float]] = {server.label: [] for server in servers}
        for round_ in range(1, args.rounds + 1):
            for server in servers:
                p95s[server.label].append(burst(server, args.students, round_))
        for label, values in p95s.items():
            print(f"{label:>8}: p95 per round {', '.join(f'{v:.0f}' for v in values)} ms, "
                  f"median {statistics.median(values):.0f} ms")
        if not args.burst_only:
            sigkill(servers[-1], args.students)
    finally:
        for server in servers:
            if server.process is not None:
                os.killpg(server.process.pid, signal.SIGTERM)
                server.process.wait(timeout=30)
        print(load())


if __name__ == "__main__":
    main()
