"""Which model answers a request: a registered name, one of its training snapshots, or an inline config.

Loading runs in the engine's pool (never on the event loop), once even when many requests
arrive together. Snapshots and from-scratch models are kept in bounded LRUs. Every one of them
still alive, cached or held by a request, counts against its kind's byte budget (LiveModels):
a model that would go past it is refused with 503 before its weights are allocated, and the
heap pages of the ones garbage-collected go back to the OS.
"""

from __future__ import annotations

import asyncio
import json
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from app import errors, process_tuning
from app.cache import LRU
from app.inference_pool import Engine
from app.registry import Registry, RegistryError
from app.schemas import InlineConfig, ModelChoice
from app.settings import Settings
from checkpoints import CheckpointError, LoadedModel, load_snapshot
from model.config import ConfigError, TransformerConfig
from model.tokenizer import CharTokenizer
from model.transformer import Transformer

INLINE_BOS = "<s>"
INLINE_DESCRIPTION = ("A from-scratch model with random weights (seeded): its numbers show the mechanics, "
                      "not learned knowledge.")
FLOAT32_BYTES = 4  # a from-scratch model's weights are float32
# freed model bytes that make a malloc_trim worth its ~10 ms per 100 MB (tiny models go without one)
TRIM_AFTER_BYTES = 32 << 20


@dataclass(frozen=True)
class Resolved:
    """A model picked for one request. `key` names it in caches (the name, name@step, or the inline config)."""

    key: str
    name: str
    loaded: LoadedModel

    @property
    def model(self) -> Transformer:
        return self.loaded.model

    @property
    def cfg(self) -> TransformerConfig:
        return self.loaded.model.cfg


def model_bytes(loaded: LoadedModel) -> int:
    return sum(p.numel() * p.element_size() for p in loaded.model.parameters())


def count_parameters(cfg: TransformerConfig) -> int:
    """Parameters of a model with this config, counted on the meta device: no weight is allocated."""
    with torch.device("meta"):
        return Transformer(cfg).parameter_counts()["total"]


class LiveModels:
    """The models of one kind still alive, in a cache or held by a request, and their bytes, under a budget.

    A cache's bounds free no model that a request still holds: a request waiting in the engine's queue
    keeps its model after the LRU dropped it, and a burst of distinct configs once held ~34 models of
    100 MB at once. Here a model counts from before it is built until it is garbage-collected, wherever
    its last reference goes; then its heap pages go back to the OS (process_tuning.release_freed_memory).
    Builds run in the pool's threads and finalizers in any thread, so every count moves under a lock.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._count = 0
        self._nbytes = 0
        self._freed_since_trim = 0
        # reentrant: a finalizer can run in a thread that holds the lock (a cyclic gc pass while it counts)
        self._lock = threading.RLock()

    def held(self) -> tuple[int, int]:
        """(models, bytes) alive now."""
        with self._lock:
            return self._count, self._nbytes

    def reserve(self, nbytes: int) -> bool:
        """Count a model about to be built, if its bytes fit beside the live ones (one model alone always does)."""
        with self._lock:
            if self._count and self._nbytes + nbytes > self.max_bytes:
                return False
            self._count += 1
            self._nbytes += nbytes
            return True

    def track(self, model: Transformer, nbytes: int) -> None:
        """Keep the reserved bytes counted until the model is garbage-collected."""
        weakref.finalize(model, self.release, nbytes).atexit = False

    def release(self, nbytes: int) -> None:
        """Uncount a model that is gone (or was never built); give the heap back once enough bytes are freed."""
        with self._lock:
            self._count -= 1
            self._nbytes -= nbytes
            self._freed_since_trim += nbytes
            trim = self._freed_since_trim >= TRIM_AFTER_BYTES
            if trim:
                self._freed_since_trim = 0
        if trim:  # off the thread that dropped the model, often the event loop: a trim takes ~10 ms per 100 MB
            threading.Thread(target=process_tuning.release_freed_memory, name="malloc-trim", daemon=True).start()


class ModelResolver:
    def __init__(self, registry: Registry, engine: Engine, settings: Settings) -> None:
        self.registry = registry
        self.engine = engine
        self.settings = settings
        budget = settings.inline_cache_mb << 20
        self.inline_models: LRU[LoadedModel] = LRU(settings.inline_cache_entries, budget, model_bytes)
        self.inline_live = LiveModels(budget)
        self.parameter_counts: LRU[int] = LRU(1024)
        self.snapshot_models: LRU[LoadedModel] = LRU(settings.inline_cache_entries, budget, model_bytes)
        self.snapshot_live = LiveModels(budget)

    async def resolve(self, choice: ModelChoice) -> Resolved:
        """The registered model a request names (at a snapshot, if asked), or the inline model it describes."""
        if choice.config is None and choice.snapshot is not None:
            return await self.snapshot(choice.model, choice.snapshot)
        if choice.config is None:
            return await self.named(choice.model)
        if choice.snapshot is not None:
            raise errors.conflicting_fields("A from-scratch `config` model has no training snapshots.")
        if choice.model is not None:
            raise errors.conflicting_fields("Give either `model` (a name) or `config` (a from-scratch model), "
                                            "not both.")
        return await self.inline(choice.config)

    async def named(self, name: str | None) -> Resolved:
        name = name or self.registry.default
        if name is None or name not in self.registry.names():
            raise self._not_offered(name)
        try:
            if self.registry.is_loaded(name):
                return Resolved(name, name, self.registry.get(name))
            # a lazy model loads in a thread of its own, not on the event loop nor in an inference worker; a request
            # waits for a large one up to load_wait_s, then hears how far it is (503); one that fails is refused
            future = asyncio.wrap_future(self.registry.start_loading(name))
            wait = self.settings.load_wait_s if self.registry.entries[name].large else None
            try:
                loaded = await asyncio.wait_for(asyncio.shield(future), timeout=wait)
            except TimeoutError:
                done, total = self.registry.entries[name].progress or (0, 1)
                raise errors.model_loading(name, done, total) from None
            return Resolved(name, name, loaded)
        except (KeyError, RegistryError) as error:
            raise self._not_offered(name) from error

    def _not_offered(self, name: str | None) -> errors.ApiError:
        """404: the model was found and refused (saying why), or there is none of that name."""
        refusal = self.registry.refusal(name) if name else None
        if refusal is not None:
            return errors.model_refused(refusal.name, refusal.reason)
        return errors.unknown_model(self.registry.names())

    # ------------------------------------------------------------ training snapshots

    def snapshots(self, name: str) -> list[dict[str, Any]]:
        """The training snapshots a checkpoint lists in its meta (step, file, val_loss, ...)."""
        listed = self.registry.get(name).meta.get("snapshots") if self.registry.is_loaded(name) else None
        return [s for s in listed if isinstance(s, dict) and "step" in s and "file" in s] if listed else []

    async def snapshot(self, name: str | None, step: int) -> Resolved:
        base = await self.named(name)
        listed = {int(s["step"]): s for s in self.snapshots(base.name)}
        if step not in listed:
            raise errors.unknown_snapshot(base.name, step, sorted(listed))
        key = f"{base.name}@{step}"
        if (loaded := self.snapshot_models.get(key)) is None:
            try:
                loaded = await self.engine.shared(("snapshot", key), lambda: self._load_snapshot(base, listed[step]))
            except (LookupError, RegistryError, CheckpointError, OSError) as error:
                raise errors.snapshot_unreadable(step) from error
        return Resolved(key, base.name, loaded)

    def _load_snapshot(self, base: Resolved, chosen: dict[str, Any]) -> LoadedModel:
        """The weights at one listed step; the file comes from the checkpoint's meta, a client names a step."""
        directory = self.registry.directory(base.name)
        if directory is None:
            raise LookupError(chosen["step"])

        def load() -> LoadedModel:
            model = load_snapshot(directory, str(chosen["file"]), base.cfg, self.registry.device)
            return LoadedModel(model, base.loaded.tokenizer, {**base.loaded.meta, "snapshot": chosen})

        # a snapshot has its base model's shape, and so its bytes
        loaded = self._within_budget(self.snapshot_live, self.snapshot_models, model_bytes(base.loaded), load,
                                     "training snapshots")
        return self.snapshot_models.put(f"{base.name}@{chosen['step']}", loaded)

    def _within_budget(self, live: LiveModels, cache: LRU[LoadedModel], nbytes: int, build: Callable[[], LoadedModel],
                       what: str) -> LoadedModel:
        """build(), counted in `live` from before its weights are allocated until it is garbage-collected.

        When its bytes do not fit beside the live models, the cache gives up its oldest first (one that a
        request still holds frees nothing now, but goes when that request ends); when they still do not fit,
        the request is refused with 503 and Retry-After.
        """
        while not live.reserve(nbytes):
            if not cache.drop_oldest():
                raise errors.models_at_budget(what)
        try:
            loaded = build()
        except BaseException:
            live.release(nbytes)
            raise
        live.track(loaded.model, nbytes)
        return loaded

    # ------------------------------------------------------------ from-scratch models

    async def inline(self, inline: InlineConfig) -> Resolved:
        try:
            cfg = inline.to_config(n_ctx=max(self.settings.max_tokens, 8))
        except ConfigError as error:
            raise errors.invalid_config(error) from error
        nbytes = await self.check_inline_size(cfg) * FLOAT32_BYTES
        key = "inline:" + json.dumps(cfg.to_dict(), sort_keys=True)
        if (loaded := self.inline_models.get(key)) is None:
            loaded = await self.engine.shared(("inline", key), lambda: self._build_inline(key, cfg, nbytes))
        return Resolved(key, "inline", loaded)

    async def check_inline_size(self, cfg: TransformerConfig) -> int:
        """The parameters of a from-scratch model; over the parameter budget it is refused before any weight is
        allocated."""
        limit = self.settings.max_inline_parameters
        shape = cfg.replace(seed=0)  # the seed changes the weights, not their number
        count = self.parameter_counts.get(shape)
        if count is None:
            counted = await self.engine.shared(("size", shape), lambda: count_parameters(shape))
            count = self.parameter_counts.put(shape, counted)
        if count > limit:
            raise errors.model_too_large(count, limit)
        return count

    def _build_inline(self, key: str, cfg: TransformerConfig, nbytes: int) -> LoadedModel:
        """A random-init model for cfg (seeded) with a byte-level tokenizer, if its nbytes fit the budget."""
        loaded = self._within_budget(self.inline_live, self.inline_models, nbytes, lambda: self._random_init(cfg),
                                     "from-scratch models")
        return self.inline_models.put(key, loaded)

    def _random_init(self, cfg: TransformerConfig) -> LoadedModel:
        enc_dec = cfg.architecture == "encoder-decoder"
        tokenizer = CharTokenizer(specials=(INLINE_BOS,)) if enc_dec else CharTokenizer()
        model = Transformer(cfg).to(self.registry.device).eval()
        meta: dict[str, Any] = {"description": INLINE_DESCRIPTION}
        if enc_dec:
            meta["bos_token"] = INLINE_BOS
        return LoadedModel(model, tokenizer, meta)
