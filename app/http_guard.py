"""The HTTP server: uvicorn's httptools protocol, guarded against clients that send or read too slowly.

uvicorn drops an idle kept-alive connection after 5 s, but nothing else: a connection that sends
nothing, trickles its request head one byte at a time, announces a body and never sends it, or never
reads its answer, stays open for as long as the client likes, and a request head may be any size
(a 300 MB header cost 107 s of CPU). On the open internet a few hundred such connections starve a
server. `GuardedHttpProtocol` bounds each of them:

- a request must arrive whole, head and body, within `client_timeout_s` of its first byte (or of the
  connection's opening): past that a partial request gets 408 and the connection is closed, and a
  connection that sent nothing is closed;
- a request head over `max_head_bytes` gets 431, a whole request (body and chunk framing included) over
  `max_request_bytes` gets 413, chunked trailers get 400, and more than 16 requests sent ahead of their
  answers (pipelining) get 429; each closes the connection;
- a client that reads none of its answer for `client_timeout_s`, or keeps an answer waiting in memory
  for 4 × `client_timeout_s` in all by reading a trickle, is dropped;
- the parser's own refusals (a malformed request line, a bad header) get the API's JSON error and the
  security headers, not uvicorn's plain text.

The limits come from the app's settings through the lifespan state (`app.factory`), so every server
process, however started, guards with its own settings.
"""

from __future__ import annotations

import asyncio
import http
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

from app.errors import error_response
from app.middleware import SECURITY_HEADERS

STATE_KEY = "connection_limits"


@dataclass(frozen=True)
class ConnectionLimits:
    client_timeout_s: float = 15.0
    max_head_bytes: int = 32 * 1024
    max_body_bytes: int = 64 * 1024  # the app refuses more (BodyLimitMiddleware); here it bounds the wire

    @property
    def max_request_bytes(self) -> int:
        """A whole request on the wire: head, body and room for chunked framing, so that the bytes a client
        keeps sending after its 413 are bounded too."""
        return self.max_head_bytes + 8 * self.max_body_bytes


def error_bytes(status: int, code: str, message: str) -> bytes:
    """A whole HTTP/1.1 response with the API's error shape, after which the connection closes."""
    body = bytes(error_response(status, code, message).body)
    head = [f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}".encode(),
            b"content-type: application/json", b"content-length: " + str(len(body)).encode(), b"connection: close"]
    head += [name + b": " + value for name, value in SECURITY_HEADERS]
    return b"\r\n".join(head) + b"\r\n\r\n" + body


TOO_SLOW = error_bytes(408, "request_timeout",
                       "The request did not arrive in time; the connection is closed. Send it again.")
HEAD_TOO_LARGE = error_bytes(431, "headers_too_large",
                             "The request's headers are too large; the connection is closed.")
TOO_LARGE = error_bytes(413, "body_too_large", "The request is too large; the connection is closed.")
TOO_MANY_PIPELINED = error_bytes(429, "too_many_requests",
                                 "Too many requests were sent ahead of their answers; the connection is closed.")
MALFORMED = error_bytes(400, "invalid_http", "This is not a valid HTTP request; the connection is closed.")

# requests a client may send ahead of their answers on one connection (HTTP/1.1 pipelining): uvicorn queues
# every one it parses, and one 256 KB read of `GET /api/health` holds ~6,500 (2 GB in 22 s, measured)
MAX_PIPELINED = 16
# an answer may wait for its client client_timeout_s at a time, and this many times that in all: 60 s by default,
# time for the rest of a 7 MB answer (the largest; a step of the page is tens of KB) at about 1 Mbit/s
READING_BUDGET = 4


class Refused(Exception):
    """Raised in a parser callback: parsing stops, and the connection is answered with `refusal` and closed."""


class GuardedHttpProtocol(HttpToolsProtocol):
    """uvicorn's HTTP/1.1 protocol with a deadline for each request to arrive, bounds on its bytes and on
    pipelining, and a deadline for the client to read its answer."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limits: ConnectionLimits = self.app_state.get(STATE_KEY) or ConnectionLimits()
        self.deadline: asyncio.TimerHandle | None = None
        self.stalled: asyncio.TimerHandle | None = None
        self.receiving = False  # a request has begun and has not arrived whole
        self.head_complete = False
        self.request_bytes = 0  # bytes received since the last request arrived whole
        self.open_cycles: list[RequestResponseCycle] = []  # parsed requests whose answer is not complete
        self.refusal = MALFORMED  # what send_400_response sends (uvicorn calls it for every parser error)
        self.paused_since: float | None = None  # writing paused: the client is not reading fast enough
        self.paused_total = 0.0  # seconds the current answer has waited for the client

    # ------------------------------------------------------------ ending a connection

    def _answering(self) -> bool:
        """An answer is on its way: bytes written now would land inside it."""
        return any(c.response_started and not c.response_complete for c in self.open_cycles)

    def _close_with(self, refusal: bytes) -> None:
        if self.transport.is_closing():
            return
        if not self._answering():
            self.transport.write(refusal)
        self.transport.close()

    def send_400_response(self, msg: str) -> None:
        self._close_with(self.refusal)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self.stalled is not None:
            self.stalled.cancel()
        # uvicorn tells only the newest parsed request; the one being answered (and any queued) must stop too,
        # or it writes to the closed transport
        for cycle in self.open_cycles:
            if not cycle.response_complete:
                cycle.disconnected = True
            cycle.message_event.set()
        super().connection_lost(exc)

    # ------------------------------------------------------------ the request's deadline

    def _arm(self) -> None:
        self._disarm()
        self.deadline = self.loop.call_later(self.limits.client_timeout_s, self._too_slow)

    def _disarm(self) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None

    def _too_slow(self) -> None:
        answered = self.head_complete and self.cycle is not None and self.cycle.response_started
        if self.receiving and not answered:  # a request began and got nothing back: say why it ends
            self._close_with(TOO_SLOW)
        else:  # nothing sent, or the answer already went (a 413 before the body): just close
            self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()  # a connection that never sends a byte is closed too

    # ------------------------------------------------------------ parser callbacks

    def on_message_begin(self) -> None:
        self.open_cycles = [c for c in self.open_cycles if not c.response_complete]
        if len(self.open_cycles) > MAX_PIPELINED:
            self.refusal = TOO_MANY_PIPELINED
            raise Refused
        super().on_message_begin()
        self.receiving, self.head_complete = True, False
        self._arm()

    def on_headers_complete(self) -> None:
        self.head_complete = True
        super().on_headers_complete()
        self.open_cycles.append(self.cycle)

    def on_header(self, name: bytes, value: bytes) -> None:
        if self.head_complete:  # a trailer after a chunked body: never needed here, and not bounded by the head
            self.refusal = MALFORMED
            raise Refused
        super().on_header(name, value)

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self.receiving, self.request_bytes = False, 0
        self.paused_total = 0.0  # a new answer gets its own reading budget
        self._disarm()

    # ------------------------------------------------------------ the request's size

    def data_received(self, data: bytes) -> None:
        """Every byte counts toward the request it belongs to, before the parser buffers it: a head over its
        limit, or a request (head, body, chunk framing, trailers) over its limit, is refused at most one read
        (256 KB) past it."""
        self.request_bytes += len(data)
        if self.deadline is None:  # bytes between requests (blank lines) also start the clock
            self._arm()
        super().data_received(data)
        if self.transport.is_closing():
            return
        if not (self.receiving and self.head_complete) and self.request_bytes > self.limits.max_head_bytes:
            self._close_with(HEAD_TOO_LARGE)
        elif self.request_bytes > self.limits.max_request_bytes:
            self._close_with(TOO_LARGE)

    # ------------------------------------------------------------ a client that does not read

    def pause_writing(self) -> None:
        """The kernel's buffer and ours are full: the rest of the answer waits in memory for the client. It may
        wait `client_timeout_s` at a time, and READING_BUDGET times that in all for one answer: a client that
        reads a trickle (64 KB every 5 s held a 7 MB answer for minutes) is dropped, and the answer with it."""
        super().pause_writing()
        self.paused_since = self.loop.time()
        if self.stalled is None:
            left = self.limits.client_timeout_s * READING_BUDGET - self.paused_total
            self.stalled = self.loop.call_later(max(0.0, min(self.limits.client_timeout_s, left)), self.transport.abort)

    def resume_writing(self) -> None:
        super().resume_writing()
        if self.paused_since is not None:
            self.paused_total += self.loop.time() - self.paused_since
            self.paused_since = None
        if self.stalled is not None:
            self.stalled.cancel()
            self.stalled = None
