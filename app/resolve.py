"""Which model answers a request: a registered name, one of its training snapshots, or an inline config.

Loading runs in the engine's pool (never on the event loop), once even when many requests
arrive together. Snapshots and from-scratch models are kept in bounded LRUs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import torch

from app import errors
from app.cache import LRU
from app.engine import Engine
from app.registry import Registry, RegistryError
from app.schemas import InlineConfig, ModelChoice
from app.settings import Settings
from model.checkpoint import CheckpointError, LoadedModel, load_snapshot
from model.config import ConfigError, TransformerConfig
from model.tokenizer import CharTokenizer
from model.transformer import Transformer

INLINE_BOS = "<s>"
INLINE_DESCRIPTION = ("A from-scratch model with random weights (seeded): its numbers show the mechanics, "
                      "not learned knowledge.")


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


class ModelResolver:
    def __init__(self, registry: Registry, engine: Engine, settings: Settings) -> None:
        self.registry = registry
        self.engine = engine
        self.settings = settings
        self.inline_models: LRU[LoadedModel] = LRU(settings.inline_cache_entries, settings.inline_cache_mb << 20,
                                                   model_bytes)
        self.parameter_counts: LRU[int] = LRU(1024)
        self.snapshot_models: LRU[LoadedModel] = LRU(settings.inline_cache_entries, settings.inline_cache_mb << 20,
                                                     model_bytes)

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
            raise errors.unknown_model(self.registry.names())
        try:
            if self.registry.is_loaded(name):
                return Resolved(name, name, self.registry.get(name))
            # a lazy model loads in the pool, not on the event loop
            loaded = await self.engine.shared(("load", name), lambda: self.registry.get(name))
            return Resolved(name, name, loaded)
        except (KeyError, RegistryError) as error:
            raise errors.unknown_model(self.registry.names()) from error

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
        model = load_snapshot(directory, str(chosen["file"]), base.cfg, self.registry.device)
        loaded = LoadedModel(model, base.loaded.tokenizer, {**base.loaded.meta, "snapshot": chosen})
        return self.snapshot_models.put(f"{base.name}@{chosen['step']}", loaded)

    # ------------------------------------------------------------ from-scratch models

    async def inline(self, inline: InlineConfig) -> Resolved:
        try:
            cfg = inline.to_config(n_ctx=max(self.settings.max_tokens, 8))
        except ConfigError as error:
            raise errors.invalid_config(error) from error
        await self.check_inline_size(cfg)
        key = "inline:" + json.dumps(cfg.to_dict(), sort_keys=True)
        if (loaded := self.inline_models.get(key)) is None:
            loaded = await self.engine.shared(("inline", key), lambda: self._build_inline(key, cfg))
        return Resolved(key, "inline", loaded)

    async def check_inline_size(self, cfg: TransformerConfig) -> None:
        """Refuse a from-scratch model over the parameter budget before any weight is allocated."""
        limit = self.settings.max_inline_parameters
        shape = cfg.replace(seed=0)  # the seed changes the weights, not their number
        count = self.parameter_counts.get(shape)
        if count is None:
            counted = await self.engine.shared(("size", shape), lambda: count_parameters(shape))
            count = self.parameter_counts.put(shape, counted)
        if count > limit:
            raise errors.model_too_large(count, limit)

    def _build_inline(self, key: str, cfg: TransformerConfig) -> LoadedModel:
        """A random-init model for cfg (seeded) with a byte-level tokenizer."""
        enc_dec = cfg.architecture == "encoder-decoder"
        tokenizer = CharTokenizer(specials=(INLINE_BOS,)) if enc_dec else CharTokenizer()
        model = Transformer(cfg).to(self.registry.device).eval()
        meta: dict[str, Any] = {"description": INLINE_DESCRIPTION}
        if enc_dec:
            meta["bos_token"] = INLINE_BOS
        return self.inline_models.put(key, LoadedModel(model, tokenizer, meta))
