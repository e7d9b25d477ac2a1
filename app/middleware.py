"""ASGI middleware: a request body limit (413), security headers on every response, HEAD answered as GET,
and an access log that holds nothing a client wrote."""

from __future__ import annotations

import logging
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.errors import body_too_large


class BodyLimitMiddleware:
    """Refuse bodies over `limit` bytes with 413 before anything parses them.

    Checks Content-Length first, then counts the bytes actually received (chunked uploads
    have no length), buffering at most `limit` bytes.
    """

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        length = headers.get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            await self._too_large(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await self._too_large(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        await body_too_large(self.limit)(scope, receive, send)


# The headers every response carries; the page adds its Content-Security-Policy itself (app.routers.pages).
SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]


class SecurityHeadersMiddleware:
    """Adds the headers every response should carry, unless a route already set them (the page sets its CSP)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                headers += [(name, value) for name, value in SECURITY_HEADERS if name not in present]
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


class HeadAsGetMiddleware:
    """Answer HEAD wherever GET is answered (health checkers and link checkers ask with HEAD).

    The app sees a GET; uvicorn sends the headers of its answer without the body, as HTTP says for HEAD,
    because the server's own record of the request still says HEAD.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "HEAD":
            scope = {**scope, "method": "GET"}
        await self.app(scope, receive, send)


access_log = logging.getLogger("transformer_explorer.access")
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"})


class AccessLogMiddleware:
    """One line per request: peer, method, the route's template, status and time.

    A path is logged as the route it matched (`/api/models/{name}`, never the name), an unmatched path and a
    query string only by their length: hostile text leaves no trace in the log beyond its length. (uvicorn's
    own access log, which writes paths and queries verbatim, is off: app.server.)
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not access_log.isEnabledFor(logging.INFO):
            await self.app(scope, receive, send)
            return
        start, status = time.perf_counter(), 0

        async def send_noting_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_noting_status)
        finally:
            access_log.info("%s %s %s %s %.1f ms", peer(scope), scope["method"] if scope["method"] in METHODS
                            else "OTHER", route_of(scope), status or "no-answer",  # the client went, or timed out
                            (time.perf_counter() - start) * 1e3)


def peer(scope: Scope) -> str:
    client = scope.get("client")
    return f"{client[0]}:{client[1]}" if client else "-"


def route_of(scope: Scope) -> str:
    """The template of the route the router matched (it notes it in the scope), or only the length of a path
    that matched none (or never reached the router: a body that did not arrive, a refusal before it)."""
    template = getattr(scope.get("route"), "path", None)
    query = scope.get("query_string", b"")
    shown = template if isinstance(template, str) else f"<path of {len(scope['path'])} characters>"
    return shown + (f" ?<query of {len(query)} bytes>" if query else "")
