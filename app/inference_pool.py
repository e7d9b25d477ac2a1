"""Inference off the event loop: a bounded thread pool, a trace cache and in-flight sharing.

- Every model call runs in a pool sized to the cores, so the server keeps answering.
- Past `workers + queue_size` waiting jobs, new work is refused (503 + Retry-After), never queued forever.
- A full trace per (model, tokens, target tokens) is computed once and kept in an LRU bounded
  by entries and bytes, so stepping through stages only slices and serializes.
- Identical work that arrives together is done once: requests with the same body share one
  future, and requests that need the same trace wait for the one computing it.
- Rendered JSON bodies, gzipped in the pool as well (app.compression), are kept in a
  byte-bounded LRU too, so a repeated request (a class of 30 opening the same example) costs a
  dictionary lookup.
- One request is one hop to the pool: trace (or cache hit), slice, serialize, render and
  compress together, because each hop between threads costs a time slice on a busy machine.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
from starlette.responses import Response

from app.cache import LRU
from app.compression import ApiJSONResponse, Rendered, RenderedJSON
from app.errors import busy
from app.tokenizing import Inputs
from model.edits import Interventions
from model.hooks import Trace
from model.tokenizer import Token
from model.transformer import Transformer

T = TypeVar("T")


@dataclass(frozen=True)
class ForwardPass:
    """One recorded forward pass: every stage, for batch 1."""

    tokens: list[Token]
    target_tokens: list[Token] | None
    output: torch.Tensor  # [batch, pos, d_vocab] logits (or [batch, pos, d_model] hidden state)
    trace: Trace
    nbytes: int = 0


def compute_trace(model: Transformer, inputs: Inputs, edits: Interventions | None = None) -> ForwardPass:
    ids = torch.tensor([[t.id for t in inputs.tokens]], device=model.device)  # [batch, pos]
    kwargs: dict[str, Any] = {}
    if inputs.target_tokens is not None:
        kwargs["target_tokens"] = torch.tensor([[t.id for t in inputs.target_tokens]], device=model.device)
    output, trace = model.run_with_trace(ids, edits=edits, **kwargs)
    return ForwardPass(inputs.tokens, inputs.target_tokens, output, trace, trace.nbytes())


class Engine:
    def __init__(self, workers: int, queue_size: int, cache_entries: int = 64, cache_bytes: int = 512 << 20) -> None:
        self.workers = max(1, workers)
        self.capacity = self.workers + max(0, queue_size)
        self.pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="inference")
        self.pending = 0  # jobs submitted and not finished (touched only on the event loop)
        self.computed = 0  # full traces computed (tests read it to prove sharing / caching)
        self._lock = threading.Lock()
        self._inflight: dict[Hashable, asyncio.Task[Any]] = {}  # on the event loop
        self._tracing: dict[Hashable, Future[ForwardPass]] = {}  # across pool threads
        self.traces: LRU[ForwardPass] = LRU(cache_entries, cache_bytes, lambda run: run.nbytes)
        self.bodies: LRU[Rendered] = LRU(10**6, max(1 << 20, cache_bytes // 8), lambda r: r.nbytes)

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

    def trace_sync(self, model_key: str, model: Transformer, inputs: Inputs,
                   edits: Interventions | None = None) -> ForwardPass:
        """The full trace: cached, being computed by another thread (wait for it), or computed here."""
        key = (model_key, *inputs.key(), edits)
        with self._lock:
            run = self.traces.get(key)
            if run is not None:
                return run
            future = self._tracing.get(key)
            owner = future is None
            if future is None:
                future = self._tracing[key] = Future()
        if not owner:
            return future.result()
        try:
            run = compute_trace(model, inputs, edits)
            with self._lock:
                self.computed += 1
                self.traces.put(key, run)
            future.set_result(run)
            return run
        except BaseException as error:
            future.set_exception(error)
            raise
        finally:
            with self._lock:
                self._tracing.pop(key, None)

    # ------------------------------------------------------------ answers

    def cached_body(self, key: Hashable | None) -> Response | None:
        """The rendered answer to an identical earlier request, if it is still cached."""
        body = None if key is None else self.bodies.get(key)
        return None if body is None else RenderedJSON(body)

    async def render(self, key: Hashable | None, build: Callable[[], Any]) -> Response:
        """Build, render and compress a JSON body in the pool; with a key, identical requests share the work
        and the bytes. The caller has looked up the body cache already (cached_body)."""

        def work() -> Rendered:
            rendered = Rendered.of(ApiJSONResponse(None).render(build()))
            if key is not None:
                self.bodies.put(key, rendered)
            return rendered

        body = await (self.shared(("body", key), work) if key is not None else self.call(work))
        return RenderedJSON(body)
