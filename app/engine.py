"""Inference off the event loop: a bounded thread pool, a trace cache and in-flight sharing.

- Every model call runs in a pool sized to the cores, so the server keeps answering.
- Past `workers + queue_size` waiting jobs, new work is refused (503 + Retry-After), never queued forever.
- A full trace per (model, text, target) is computed once and kept in an LRU bounded by
  entries and bytes, so stepping through stages only slices and serializes.
- Identical requests that arrive together share one computation (one future per key).
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import torch

from app.errors import ApiError
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
    return TraceRun(tokens, target_tokens, output, trace)


class Engine:
    def __init__(self, workers: int, queue_size: int, cache_entries: int = 64, cache_bytes: int = 512 << 20) -> None:
        self.workers = max(1, workers)
        self.capacity = self.workers + max(0, queue_size)
        self.pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="inference")
        self.pending = 0  # jobs submitted and not finished (touched only on the event loop)
        self._inflight: dict[Hashable, asyncio.Task[Any]] = {}
        self._cache: OrderedDict[Hashable, TraceRun] = OrderedDict()
        self._cache_entries = cache_entries
        self._cache_bytes = cache_bytes
        self._cache_lock = threading.Lock()
        self.computed = 0  # full traces computed (tests read it to prove sharing / caching)

    def shutdown(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)

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

    # ------------------------------------------------------------ trace cache

    def cached(self, key: Hashable) -> TraceRun | None:
        with self._cache_lock:
            run = self._cache.get(key)
            if run is not None:
                self._cache.move_to_end(key)
            return run

    def _store(self, key: Hashable, run: TraceRun) -> None:
        with self._cache_lock:
            self._cache[key] = run
            total = sum(r.trace.nbytes() for r in self._cache.values())
            while len(self._cache) > 1 and (len(self._cache) > self._cache_entries or total > self._cache_bytes):
                _, dropped = self._cache.popitem(last=False)
                total -= dropped.trace.nbytes()

    async def trace(self, resolved: Resolved, tokens: list[Token], target_tokens: list[Token] | None) -> TraceRun:
        """The full trace for these tokens: from the cache, from a computation in flight, or computed now."""
        # tokens, not text: the key is short, and two texts that tokenize the same share a trace
        key = (resolved.key, tuple(tokens), None if target_tokens is None else tuple(target_tokens))
        run = self.cached(key)
        if run is not None:
            return run

        def work() -> TraceRun:
            fresh = compute_trace(resolved, tokens, target_tokens)
            self.computed += 1
            self._store(key, fresh)
            return fresh

        return await self.shared(key, work)
