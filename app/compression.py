"""Answers rendered to JSON (ApiJSONResponse) and compressed once, in the inference pool, sent as the client accepts.

A trace answer is rendered to JSON in the pool thread that built it, and gzipped there too,
so the event loop only hands bytes to the socket, and an answer kept in the body cache is
never compressed again: a class of 30 opening the same example costs one compression.
Everything else (the page, the model list, errors) goes through the GZip middleware with the
same settings; it passes an answer that is already encoded through untouched.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
import orjson
from fastapi.responses import JSONResponse
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

GZIP_MIN_BYTES = 1024  # below this, gzip's header costs more than it saves
# level 1: a 53 KB first view in ~0.6 ms with zlib (17.1 KB); level 5 took ~3 ms for 13.8 KB
GZIP_LEVEL = 1


class ApiJSONResponse(JSONResponse):
    """Compact UTF-8 JSON that never writes NaN/Infinity and survives lone surrogates.

    orjson writes the body (a trace's thousands of floats in a tenth of the time `json` takes;
    it writes NaN and Infinity as null). What orjson refuses (a string holding a lone surrogate,
    valid in JSON as "\\ud800" but not as UTF-8; an integer past 64 bits) falls back to `json`
    with ASCII escapes, which is still valid JSON.
    """

    def render(self, content: Any) -> bytes:
        try:
            return orjson.dumps(content, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)
        except orjson.JSONEncodeError:
            return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":"),
                              default=_as_lists).encode("ascii")


def _as_lists(value: object) -> object:
    """What `json` cannot write itself: the numpy arrays a tensor's data travels in (app.tensors)."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _deflate() -> ModuleType:
    """ISA-L's deflate where it is installed (a pyproject dependency, wheels for the usual platforms): the same
    gzip bytes, made ~4x faster than zlib's fastest level and a little smaller (a 53 KB first view: 0.14 ms,
    16.0 KB, measured side by side). zlib otherwise."""
    try:
        from isal import isal_zlib
    except ImportError:
        return zlib
    return isal_zlib


DEFLATE = _deflate()


def gzip_bytes(body: bytes, level: int = GZIP_LEVEL) -> bytes:
    compressor = DEFLATE.compressobj(level, DEFLATE.DEFLATED, 16 + DEFLATE.MAX_WBITS)  # 16+: the gzip container
    return compressor.compress(body) + compressor.flush()


@dataclass(frozen=True)
class Rendered:
    """A JSON answer as bytes, and gzipped when it is big enough to gain from it."""

    body: bytes
    gzipped: bytes | None

    @classmethod
    def of(cls, body: bytes) -> Rendered:
        return cls(body, gzip_bytes(body) if len(body) >= GZIP_MIN_BYTES else None)

    @property
    def nbytes(self) -> int:
        return len(self.body) + len(self.gzipped or b"")


def accepts_gzip(scope: Scope) -> bool:
    return any(name == b"accept-encoding" and b"gzip" in value.lower() for name, value in scope["headers"])


class RenderedJSON(Response):
    """A JSON response rendered (and compressed) already; gzip goes out to clients that accept it."""

    media_type = "application/json"

    def __init__(self, rendered: Rendered) -> None:
        super().__init__(rendered.body)
        self.gzipped = rendered.gzipped

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.gzipped is not None and accepts_gzip(scope):
            self.body = self.gzipped
            self.headers["content-length"] = str(len(self.gzipped))
            self.headers["content-encoding"] = "gzip"  # the GZip middleware passes it through as it is
            self.headers["vary"] = "Accept-Encoding"  # (the middleware says so itself for the plain body)
        await super().__call__(scope, receive, send)
