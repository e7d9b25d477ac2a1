"""The app factory: settings, registry (loaded once at startup), the service, routers and middleware.

Run it with `transformer-explorer serve` or `python -m transformer_explorer`; tests call
`create_app(settings, registry)` with a registry of tiny seeded models.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.middleware.gzip import GZipMiddleware

from app import process_tuning
from app.catalogue import build_registry
from app.classes import ClassSessions, open_classroom
from app.compression import GZIP_LEVEL, GZIP_MIN_BYTES, ApiJSONResponse
from app.errors import install_error_handlers
from app.http_guard import STATE_KEY as CONNECTION_LIMITS
from app.http_guard import ConnectionLimits
from app.middleware import AccessLogMiddleware, BodyLimitMiddleware, HeadAsGetMiddleware, SecurityHeadersMiddleware
from app.registry import Registry
from app.routers import classes, docs, explorer, health, lab, lessons, pages
from app.service import Service
from app.settings import Settings

log = logging.getLogger("transformer_explorer")

DESCRIPTION = """Every stage of a Transformer's forward pass, as JSON.

Pick a model by name (`GET /api/models`) or describe a from-scratch one inline (`config`),
send a text, and read any recorded stage (`POST /api/trace`) — the trace names are listed
per model under `stages`. Tensors are `{name, dims, shape, dtype, data}` without the batch
dimension. `data` is nested lists rounded to 4 significant digits with masked cells as `null`,
or with `"encoding": "base64"` Plotly's typed array `{dtype, bdata, shape}`: `"f4"` for
float32, `"f2"` for float16. plotly.js has no `f2` — decode it to a Float32Array before plotting
(masked cells are NaN there). Errors are `{"error": {"code", "message"}}`.
"""


def create_app(settings: Settings | None = None, registry: Registry | None = None) -> FastAPI:
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[dict[str, ConnectionLimits]]:
        process_tuning.configure(settings.torch_threads, keep_mb=settings.prefault_mb)  # once, before any inference
        service = Service(registry if registry is not None else build_registry(settings), settings)
        app.state.service = service
        # the heap and the meta device first, before any request: in an inference worker, which no request needs
        # yet (the uncached first views that followed measured 1.56-1.68x a plain forward, against 1.90-2.01x
        # when another thread did it; bench/api_latency.py)
        await asyncio.get_running_loop().run_in_executor(service.engine.pool, service.prepare)
        # the class sessions' database, migrated before the first request (classroom/database.py)
        classroom = await asyncio.to_thread(open_classroom, settings)
        app.state.classes = ClassSessions(classroom, settings.class_streams, service)
        # lazy models (minilm) load in the background: startup stays fast, first use does not wait long. A thread
        # of its own, not an inference worker: a class that starts with the server gets both workers at once
        warming = ThreadPoolExecutor(max_workers=1, thread_name_prefix="warm-up")
        warm = asyncio.get_running_loop().run_in_executor(warming, service.warm_up)
        log.info("models: %s (default %s)", ", ".join(service.registry.names()), service.registry.default)
        # what start-up built (the models, torch's modules) lives as long as the server: moved out of the garbage
        # collector's generations, the first full collections no longer scan it (one took 433 ms right after
        # start-up, in the middle of a class's first burst of answers: bench/classroom.py)
        gc.freeze()
        # the lifespan state reaches the server's connections (app.http_guard), which guard with these limits
        yield {CONNECTION_LIMITS: ConnectionLimits(settings.client_timeout_s, settings.max_head_bytes,
                                                   settings.max_body_bytes)}
        warm.cancel()
        warming.shutdown(wait=False, cancel_futures=True)
        service.shutdown()
        classroom.engine.dispose()

    app = FastAPI(
        title="Transformer Explorer API",
        version="0.1.0",
        description=DESCRIPTION,
        lifespan=lifespan,
        default_response_class=ApiJSONResponse,
        docs_url=None,  # served by app.routers.docs from local files, not a CDN
        redoc_url=None,
        # no redirect from /api/health/ to /api/health: it would be built from the client's Host header
        redirect_slashes=False,
    )
    app.state.settings = settings
    install_error_handlers(app)
    for module in (health, explorer, lab, lessons, classes, docs, pages):
        app.include_router(module.router)

    # added last = outermost: the body limit runs before anything reads or parses the body
    # answers about a text arrive gzipped from the pool already (app.compression); this compresses the rest
    app.add_middleware(GZipMiddleware, minimum_size=GZIP_MIN_BYTES, compresslevel=GZIP_LEVEL)
    if settings.cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=settings.cors_origins, allow_methods=["GET", "POST"],
                           allow_headers=["Content-Type"])
    app.add_middleware(BodyLimitMiddleware, limit=settings.max_body_bytes)
    app.add_middleware(AccessLogMiddleware)  # inside HEAD-as-GET: it logs a HEAD as the GET the routes saw
    app.add_middleware(HeadAsGetMiddleware)
    app.add_middleware(SecurityHeadersMiddleware)  # outermost: even a 413 carries the headers
    return app
