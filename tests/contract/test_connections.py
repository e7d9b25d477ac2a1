"""Clients that send or read too slowly, or send too much head, cannot hold the server (app.http_guard).

A real server with the production protocol and small limits (1 s, 4 KB), driven over raw sockets.
"""

from __future__ import annotations

import contextlib
import json
import logging
import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from app.factory import create_app
from app.http_guard import READING_BUDGET, ConnectionLimits, GuardedHttpProtocol
from tests.app.conftest import make_registry, make_settings
from tests.contract.conftest import LiveServer, shipped_app

TIMEOUT_S = 1.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    settings = make_settings(Path(tmp_path_factory.mktemp("conn")), client_timeout_s=TIMEOUT_S, max_head_bytes=4096)
    with LiveServer(create_app(settings, make_registry())) as live:
        yield live


def connect(server: LiveServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=10)


def read_until_closed(sock: socket.socket) -> tuple[bytes, float]:
    """Everything the server sends until it closes the connection, and how long that took."""
    start, received = time.monotonic(), b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    return received, time.monotonic() - start


def status_and_error(response: bytes) -> tuple[int, dict[str, str], dict[str, str]]:
    head, _, body = response.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, json.loads(body)["error"]


def test_a_connection_that_sends_nothing_is_closed(server: LiveServer) -> None:
    received, waited = read_until_closed(connect(server))
    assert received == b""
    assert TIMEOUT_S * 0.8 < waited < TIMEOUT_S + 3


@pytest.mark.parametrize("partial", [
    b"GET /api/health HTTP/1.1\r\nHost: x\r\nX-Slow: ",  # a head trickled byte by byte
    b"POST /api/trace HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{",
])
def test_a_request_that_does_not_arrive_in_time_gets_408_and_is_closed(server: LiveServer, partial: bytes) -> None:
    sock = connect(server)
    sock.sendall(partial)
    received, waited = read_until_closed(sock)
    status, headers, error = status_and_error(received)
    assert (status, error["code"]) == (408, "request_timeout")
    assert headers["x-content-type-options"] == "nosniff" and headers["connection"] == "close"
    assert waited < TIMEOUT_S + 3


def test_trickling_bytes_does_not_reset_the_deadline(server: LiveServer) -> None:
    sock = connect(server)
    sock.sendall(b"GET /api/health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    start = time.monotonic()
    with pytest.raises(OSError):  # the server closes the connection while bytes keep coming
        for _ in range(40):
            sock.sendall(b"a")
            time.sleep(0.1)
    assert time.monotonic() - start < TIMEOUT_S + 3


def test_a_head_over_the_limit_is_refused_before_it_is_read_whole(server: LiveServer) -> None:
    sock = connect(server)
    try:
        sock.sendall(b"GET /api/health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (4 << 20) + b"\r\n\r\n")
    except OSError:
        return  # closed while 4 MB were still being sent: refused, not read
    received, _ = read_until_closed(sock)
    assert received == b"" or status_and_error(received)[0] == 431


def test_a_malformed_request_gets_the_api_error_shape_and_the_security_headers(server: LiveServer) -> None:
    sock = connect(server)
    sock.sendall(b"NOT AN HTTP REQUEST\r\n\r\n")
    status, headers, error = status_and_error(read_until_closed(sock)[0])
    assert (status, error["code"]) == (400, "invalid_http")
    assert headers["x-frame-options"] == "DENY"


@pytest.fixture(scope="module")
def patient_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A server that lets a slow client hold its connection for 30 s: long enough that, on a loaded machine,
    nothing can pass for "the slow clients were timed out first"."""
    settings = make_settings(Path(tmp_path_factory.mktemp("patient")), client_timeout_s=30.0, max_head_bytes=4096)
    with LiveServer(create_app(settings, make_registry())) as live:
        yield live


def test_the_server_keeps_answering_while_slow_clients_hold_connections(patient_server: LiveServer) -> None:
    # no clock: the claim is an order. The health request is answered while all 20 slow clients still hold
    # their connections (none of them has been answered or closed yet), so they do not block the server.
    slow = [connect(patient_server) for _ in range(20)]
    for sock in slow:
        sock.sendall(b"GET /api/health HTTP/1.1\r\nHost: x\r\n")
    assert httpx.get(f"{patient_server.url}/api/health", timeout=25).status_code == 200
    readable, _, _ = select.select(slow, [], [], 0)
    assert readable == [], "a slow client was answered (or dropped) before the server answered the health check"
    for sock in slow:
        sock.close()


def test_slow_clients_are_timed_out_with_a_408(server: LiveServer) -> None:
    slow = [connect(server) for _ in range(20)]
    for sock in slow:
        sock.sendall(b"GET /api/health HTTP/1.1\r\nHost: x\r\n")
    assert all(status_and_error(read_until_closed(sock)[0])[0] == 408 for sock in slow)


def test_kept_alive_requests_and_head_still_work(server: LiveServer) -> None:
    with httpx.Client(base_url=server.url, timeout=5) as client:
        for _ in range(3):
            assert client.get("/api/health").status_code == 200
            time.sleep(TIMEOUT_S * 0.4)  # a deadline runs only while a request arrives, not between requests
        head = client.head("/")
        assert head.status_code == 200 and head.content == b""


def test_the_access_log_names_routes_never_what_the_client_wrote(server: LiveServer,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="transformer_explorer.access")
    hostile = "HOSTILE<script>"
    httpx.get(f"{server.url}/api/models/{hostile}", timeout=5)
    httpx.get(f"{server.url}/api/{hostile}?q={hostile}", headers={"X-Forwarded-For": hostile}, timeout=5)
    logged = [r.getMessage() for r in caplog.records if r.name == "transformer_explorer.access"]
    assert any("GET /api/models/{name} 404" in line for line in logged), logged
    assert any("<path of" in line and "<query of" in line for line in logged), logged
    assert not any("HOSTILE" in line for line in logged)


def test_requests_sent_far_ahead_of_their_answers_are_refused(server: LiveServer) -> None:
    """uvicorn queues every pipelined request it parses: one read of `GET /api/health` x 6,500 grew the
    server by 2 GB in 22 s. Past 16 waiting, the connection is answered 429 and closed."""
    sock = connect(server)
    request = b"GET /api/health HTTP/1.1\r\nHost: x\r\n\r\n"
    with contextlib.suppress(OSError):  # closed while sending: refused
        sock.sendall(request * 2000)
    received, _ = read_until_closed(sock)
    assert received.count(b"HTTP/1.1 200") <= 17
    assert b"too_many_requests" in received or received.count(b"HTTP/1.1 200") < 2000
    assert httpx.get(f"{server.url}/api/health", timeout=5).status_code == 200
    last = b"GET /api/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    few, _ = read_all_of(server, request * 2 + last)  # a few pipelined requests are still answered in order
    assert few.count(b"HTTP/1.1 200") == 3


def read_all_of(server: LiveServer, raw: bytes) -> tuple[bytes, float]:
    sock = connect(server)
    sock.sendall(raw)
    sock.settimeout(TIMEOUT_S + 3)
    return read_until_closed(sock)


def test_trailers_and_endless_bodies_are_bounded(server: LiveServer) -> None:
    head = (b"POST /api/tokenize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")
    trailer, _ = read_all_of(server, head + b"2\r\n{}\r\n0\r\nX-T: a\r\n\r\n")
    assert status_and_error(trailer)[0] == 400  # a trailer is never needed here, and no head limit bounds it
    sock = connect(server)
    sent = 0
    try:  # a body declared huge keeps coming after its 413: the connection closes past the request limit
        sock.sendall(b"POST /api/trace HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100000000\r\n\r\n")
        while sent < 8 << 20:
            sock.sendall(b"a" * 65536)
            sent += 65536
    except OSError:
        pass
    assert sent < 8 << 20


def test_a_413_closes_the_connection_so_the_unread_body_is_not_taken_for_a_request(server: LiveServer) -> None:
    raw = (b"POST /api/trace HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
           b"GET /api/health HTTP/1.1\r\nHost: x\r\n\r\n")
    received, _ = read_all_of(server, raw)
    # one answer: closed at once; had it waited for the deadline, a second, unasked-for 408 would follow
    assert status_and_error(received)[0] == 413 and received.count(b"HTTP/1.1") == 1


def test_a_dropped_reader_leaves_no_error_in_the_log(server: LiveServer, caplog: pytest.LogCaptureFixture) -> None:
    """The answer being written and the requests queued behind it all learn that the client is gone."""
    caplog.set_level(logging.WARNING)
    body = json.dumps({"model": "gpt", "text": "the cat sat on the mat " * 2, "stages": ["*"]}).encode()
    sock = connect(server)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.sendall(b"POST /api/trace HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
                 + str(len(body)).encode() + b"\r\n\r\n" + body + b"GET /api/health HTTP/1.1\r\nHost: x\r\n\r\n" * 2)
    time.sleep(TIMEOUT_S * 3)
    sock.close()
    time.sleep(0.5)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], [r.getMessage() for r in caplog.records]


def test_a_client_that_stops_reading_lets_go_of_its_answer() -> None:
    """The rest of an answer the kernel cannot take (12 MB here, ~4 MB of it in the kernel) waits in the server's
    memory; a client that reads too slowly is dropped and the server lets go of the connection and its answer.
    (The kernel may still send what it holds, then closes.)"""
    body = json.dumps({"model": "tiny-gpt", "text": "the cat sat on the mat while it rained " * 5,
                       "stages": ["*"]}).encode()
    with LiveServer(shipped_app(client_timeout_s=TIMEOUT_S)) as live:
        sock = socket.create_connection(("127.0.0.1", live.port), timeout=10)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.sendall(b"POST /api/trace HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
                     + str(len(body)).encode() + b"\r\n\r\n" + body)
        held = live.server.server_state.connections
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not held:  # the answer is being computed
            time.sleep(0.05)
        start = time.monotonic()
        while time.monotonic() - start < 15 and held:
            sock.recv(4096)  # a trickle, never a whole second without reading
            time.sleep(0.05)
        assert not held, "the server still holds a connection whose client reads a trickle"
        assert time.monotonic() - start < TIMEOUT_S * READING_BUDGET + 3
        sock.close()


class FakeLoop:
    """A clock the test moves by hand, with call_later timers that fire when it passes them."""

    def __init__(self) -> None:
        self.now = 0.0
        self.timers: list[list[Any]] = []

    def time(self) -> float:
        return self.now

    def call_later(self, delay: float, callback: Any) -> Any:
        timer = [self.now + delay, callback, False]
        self.timers.append(timer)
        return SimpleNamespace(cancel=lambda: timer.__setitem__(2, True))

    def advance_to(self, moment: float) -> None:
        for timer in sorted(self.timers, key=lambda t: t[0]):
            if not timer[2] and timer[0] <= moment:
                self.now, timer[2] = timer[0], True
                timer[1]()
        self.now = moment


def test_an_answer_may_wait_for_its_reader_only_so_long_in_all() -> None:
    """Stalls of 0.9 s each, under the 1 s a single stall may last, still add up: past 4 x 1 s the client goes."""
    loop = FakeLoop()
    aborted: list[float] = []
    protocol = GuardedHttpProtocol.__new__(GuardedHttpProtocol)
    protocol.loop = loop  # type: ignore[assignment]
    protocol.limits = ConnectionLimits(client_timeout_s=1.0)
    protocol.flow = SimpleNamespace(pause_writing=lambda: None, resume_writing=lambda: None)  # type: ignore[assignment]
    protocol.transport = SimpleNamespace(abort=lambda: aborted.append(loop.now))  # type: ignore[assignment]
    protocol.stalled, protocol.paused_since, protocol.paused_total = None, None, 0.0
    for second in range(6):
        loop.advance_to(second)
        protocol.pause_writing()
        loop.advance_to(second + 0.9)
        if aborted:
            break
        protocol.resume_writing()
    assert aborted and aborted[0] == pytest.approx(TIMEOUT_S * READING_BUDGET + 0.4)  # 4 x 0.9 s, then 0.4 s more
