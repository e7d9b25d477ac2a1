"""The HTTP server: uvicorn's httptools protocol, guarded against clients that send or read too slowly.

uvicorn drops an idle kept-alive connection after 5 s, but nothing else: a connection that sends
nothing, trickles its request head one byte at a time, announces a body and never sends it, or never
reads its answer, stays open for as long as the client likes, and a request head may be any size
(a 300 MB header cost 107 s of CPU). On the open internet a few hundred such connections starve a
server. `GuardedHttpProtocol` bounds each of them:

- a request must arrive whole, head and body, within `client_timeout_s` of its first byte (or of the
  connection's opening): past that a partial request gets 408 and the connection is closed, and a
  connection that sent nothing is closed;
- a request head over `max_head_bytes` gets 431 and the connection is closed;
- a client that reads none of its answer for `client_timeout_s` is dropped;
- the parser's own refusals (a malformed request line, a bad header) get the API's JSON error and the
  security headers, not uvicorn's plain text.

The limits come from the app's settings through the lifespan state (`app.main`), so every server
process, however started, guards with its own settings.
"""

from __future__ import annotations

import asyncio
import http
from dataclasses import dataclass
from typing import Any

import orjson
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from app.middleware import SECURITY_HEADERS

STATE_KEY = "connection_limits"


@dataclass(frozen=True)
class ConnectionLimits:
    client_timeout_s: float = 15.0
    max_head_bytes: int = 32 * 1024


def error_bytes(status: int, code: str, message: str) -> bytes:
    """A whole HTTP/1.1 response with the API's error shape, after which the connection closes."""
    body = orjson.dumps({"error": {"code": code, "message": message}})
    head = [f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}".encode(),
            b"content-type: application/json", b"content-length: " + str(len(body)).encode(), b"connection: close"]
    head += [name + b": " + value for name, value in SECURITY_HEADERS]
    return b"\r\n".join(head) + b"\r\n\r\n" + body


TOO_SLOW = error_bytes(408, "request_timeout",
                       "The request did not arrive in time; the connection is closed. Send it again.")
HEAD_TOO_LARGE = error_bytes(431, "headers_too_large",
                             "The request's headers are too large; the connection is closed.")
MALFORMED = error_bytes(400, "invalid_http", "This is not a valid HTTP request; the connection is closed.")


class GuardedHttpProtocol(HttpToolsProtocol):
    """uvicorn's HTTP/1.1 protocol with a deadline for each request to arrive, a bound on its head, and a
    deadline for the client to read its answer."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limits: ConnectionLimits = self.app_state.get(STATE_KEY) or ConnectionLimits()
        self.deadline: asyncio.TimerHandle | None = None
        self.stalled: asyncio.TimerHandle | None = None
        self.receiving = False  # a request has begun and has not arrived whole
        self.head_complete = False
        self.head_bytes = 0

    # ------------------------------------------------------------ the request's deadline

    def _arm(self) -> None:
        self._disarm()
        self.deadline = self.loop.call_later(self.limits.client_timeout_s, self._too_slow)

    def _disarm(self) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None

    def _too_slow(self) -> None:
        if self.transport.is_closing():
            return
        if self.receiving and (self.cycle is None or self.cycle.response_complete or not self.cycle.response_started):
            self.transport.write(TOO_SLOW)
        self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()  # a connection that never sends a byte is closed too

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self.stalled is not None:
            self.stalled.cancel()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.receiving, self.head_complete = True, False
        self._arm()

    def on_headers_complete(self) -> None:
        self.head_complete, self.head_bytes = True, 0
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self.receiving = False
        self._disarm()

    # ------------------------------------------------------------ the head's size

    def data_received(self, data: bytes) -> None:
        """Counted while a head is awaited or arriving, before the parser buffers it: a head larger than the
        limit is refused at most one read (256 KB) past it."""
        if not self.receiving or not self.head_complete:
            self.head_bytes += len(data)
            if self.deadline is None:  # bytes between requests (blank lines) also start the clock
                self._arm()
        super().data_received(data)
        if self.transport.is_closing() or (self.receiving and self.head_complete):
            return
        if self.head_bytes > self.limits.max_head_bytes:
            self.transport.write(HEAD_TOO_LARGE)
            self.transport.close()

    def send_400_response(self, msg: str) -> None:
        self.transport.write(MALFORMED)
        self.transport.close()

    # ------------------------------------------------------------ a client that does not read

    def pause_writing(self) -> None:
        super().pause_writing()
        if self.stalled is None:
            self.stalled = self.loop.call_later(self.limits.client_timeout_s, self.transport.abort)

    def resume_writing(self) -> None:
        super().resume_writing()
        if self.stalled is not None:
            self.stalled.cancel()
            self.stalled = None
