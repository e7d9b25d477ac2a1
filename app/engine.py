"""Inference off the event loop: a bounded thread pool, a trace cache and in-flight sharing.

- Every model call runs in a pool sized to the cores, so the server keeps answering.
- Past `workers + queue_size` waiting jobs, new work is refused (503 + Retry-After), never queued forever.
- A full trace per (model, tokens, target tokens) is computed once and kept in an LRU bounded
  by entries and bytes, so stepping through stages only slices and serializes.
- Identical work that arrives together is done once: requests with the same body share one
  future, and requests that need the same trace wait for the one computing it.
- Rendered JSON bodies are kept in a byte-bounded LRU too, so a repeated request (a class
  of 30 opening the same example) costs a dictionary lookup.
- One request is one hop to the pool: trace (or cache hit), slice, serialize and render
  together, because each hop between threads costs a time slice on a busy machine.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
from starlette.responses import Response

from app.errors import ApiError, ApiJSONResponse
from app.registry import Resolved
from model.hooks import Trace
from model.tokenizer import Token

T = TypeVar("T")


@dataclass(frozen=True)
class TraceRun:
    """One recorded forward pass: every stage, for batch 1."""

    tokens: list[Token]
    target_tokens: list[Token] | None
    output: torch.Tensor  # [batch, pos, d_vocab] logits (or [batch, pos, d_model] hidden state)
    trace: Trace
    nbytes: int = 0


class RenderedJSON(Response):
    """A JSON response whose bytes were rendered already (in the pool, or taken from the cache)."""

    media_type = "application/json"


def busy() -> ApiError:
    return ApiError(503, "busy", "The server is busy with other requests — try again in a moment.",
                    headers={"Retry-After": "1"})


def compute_trace(resolved: Resolved, tokens: list[Token], target_tokens: list[Token] | None) -> TraceRun:
    model = resolved.model
    ids = torch.tensor([[t.id for t in tokens]], device=model.device)  # [batch, pos]
    kwargs: dict[str, Any] = {}
    if target_tokens is not None:
        kwargs["target_tokens"] = torch.tensor([[t.id for t in target_tokens]], device=model.device)
    output, trace = model.run_with_trace(ids, **kwargs)
    return TraceRun(tokens, target_tokens, output, trace, trace.nbytes())


def body_key(endpoint: str, resolved: Resolved, request: Any) -> Hashable:
    """Everything that decides a deterministic answer: endpoint, model, and the request's fields."""
    return (endpoint, resolved.key, repr(request.model_dump(exclude={"model", "config"})))  # repr: any str


class Engine:
    def __init__(self, workers: int, queue_size: int, cache_entries: int = 64, cache_bytes: int = 512 << 20) -> None:
        self.workers = max(1, workers)
        self.capacity = self.workers + max(0, queue_size)
        self.pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="inference")
        self.pending = 0  # jobs submitted and not finished (touched only on the event loop)
        self.computed = 0  # full traces computed (tests read it to prove sharing / caching)
        self._lock = threading.Lock()
        self._inflight: dict[Hashable, asyncio.Task[Any]] = {}  # on the event loop
        self._tracing: dict[Hashable, Future[TraceRun]] = {}  # across pool threads
        self._traces: OrderedDict[Hashable, TraceRun] = OrderedDict()
        self._traces_bytes = 0
        self._trace_entries, self._trace_limit = cache_entries, cache_bytes
        self._bodies: OrderedDict[Hashable, bytes] = OrderedDict()
        self._bodies_bytes = 0
        self._bodies_limit = max(1 << 20, cache_bytes // 8)

    def shutdown(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------ running work

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run fn(*args) in the pool, or refuse with 503 when the queue is full."""
        if self.pending >= self.capacity:
            raise busy()
        self.pending += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)
        finally:
            self.pending -= 1

    async def shared(self, key: Hashable, fn: Callable[[], T]) -> T:
        """Like call, but concurrent callers with the same key await one computation.

        The computation is shielded: a client that disconnects does not cancel it for the others.
        """
        task = self._inflight.get(key)
        if task is None:
            task = asyncio.ensure_future(self.call(fn))
            self._inflight[key] = task
            task.add_done_callback(lambda _: self._inflight.pop(key, None))
        return await asyncio.shield(task)

    # ------------------------------------------------------------ trace cache (pool threads)

    def trace_sync(self, resolved: Resolved, tokens: list[Token], target_tokens: list[Token] | None) -> TraceRun:
        """The full trace: cached, being computed by another thread (wait for it), or computed here."""
        # tokens, not text: the key is short, and two texts that tokenize the same share a trace
        key = (resolved.key, tuple(tokens), None if target_tokens is None else tuple(target_tokens))
        with self._lock:
            run = self._traces.get(key)
            if run is not None:
                self._traces.move_to_end(key)
                return run
            future = self._tracing.get(key)
            owner = future is None
            if future is None:
                future = self._tracing[key] = Future()
        if not owner:
            return future.result()
        try:
            run = compute_trace(resolved, tokens, target_tokens)
            self._store(key, run)
            future.set_result(run)
            return run
        except BaseException as error:
            future.set_exception(error)
            raise
        finally:
            with self._lock:
                self._tracing.pop(key, None)

    def _store(self, key: Hashable, run: TraceRun) -> None:
        with self._lock:
            self.computed += 1
            self._traces[key] = run
            self._traces_bytes += run.nbytes
            while len(self._traces) > 1 and (
                len(self._traces) > self._trace_entries or self._traces_bytes > self._trace_limit
            ):
                _, dropped = self._traces.popitem(last=False)
                self._traces_bytes -= dropped.nbytes

    def cached_trace(self, key: Hashable) -> TraceRun | None:
        with self._lock:
            return self._traces.get(key)

    # ------------------------------------------------------------ answers

    def cached_body(self, key: Hashable | None) -> Response | None:
        """The rendered answer to an identical earlier request, if it is still cached."""
        if key is None:
            return None
        with self._lock:
            body = self._bodies.get(key)
            if body is not None:
                self._bodies.move_to_end(key)
        return None if body is None else RenderedJSON(body)

    def _remember(self, key: Hashable, body: bytes) -> None:
        with self._lock:
            if key in self._bodies:
                return
            self._bodies[key] = body
            self._bodies_bytes += len(body)
            while len(self._bodies) > 1 and self._bodies_bytes > self._bodies_limit:
                _, dropped = self._bodies.popitem(last=False)
                self._bodies_bytes -= len(dropped)

    async def respond(self, key: Hashable | None, build: Callable[[], Any]) -> Response:
        """Build and render a JSON body in the pool; with a key, identical requests share the work and the bytes."""
        cached = self.cached_body(key)
        if cached is not None:
            return cached

        def work() -> bytes:
            rendered = ApiJSONResponse(None).render(build())
            if key is not None:
                self._remember(key, rendered)
            return rendered

        body = await (self.shared(("body", key), work) if key is not None else self.call(work))
        return RenderedJSON(body)

    async def answer(
        self, key: Hashable | None, resolved: Resolved, tokens: list[Token], target_tokens: list[Token] | None,
        build: Callable[[TraceRun], Any],
    ) -> Response:
        """Trace (or reuse the cached trace), then build and render the answer: one hop to the pool."""
        return await self.respond(key, lambda: build(self.trace_sync(resolved, tokens, target_tokens)))
