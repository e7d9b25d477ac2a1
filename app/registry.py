"""The models a server offers, by name: name -> loaded model, and nothing else.

Clients choose a name; they never send a path. Entries are filled by `app.catalogue`
(shipped weights, packages, the operator's --add-model) or by tests. An entry may load
lazily (on first use, once) and may be broken (kept with its reason, never offered).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from checkpoints import LoadedModel

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$")  # ':' for Ollama's names (qwen2.5:0.5b)


class RegistryError(ValueError):
    """A model that cannot be registered (bad name, unreadable checkpoint); the message says why."""


@dataclass
class Entry:
    name: str
    description: str
    source: str  # "weights", "package", "operator", "test"
    loader: Callable[[], LoadedModel | None] | None = None
    loaded: LoadedModel | None = None
    error: str | None = None
    directory: Path | None = None  # where its checkpoint lives (training snapshots are read from there)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self) -> LoadedModel:
        """Load on first use (once, even when many requests arrive together)."""
        if self.loaded is None:
            with self.lock:
                if self.loaded is None and self.loader is not None:
                    self.loaded = self.loader()
        if self.loaded is None:
            raise RegistryError(f"model {self.name!r} could not be loaded")
        return self.loaded


class Registry:
    def __init__(self, default: str | None = None, device: str = "cpu") -> None:
        self.entries: dict[str, Entry] = {}
        self.default_name = default
        self.device = device

    def add(self, name: str, loaded: LoadedModel | None = None, *,
            loader: Callable[[], LoadedModel | None] | None = None, description: str = "", source: str = "operator",
            directory: Path | None = None) -> None:
        if not NAME_PATTERN.match(name):
            raise RegistryError(f"model name {name!r} must be 1-64 letters, digits, '.', '_', ':' or '-'")
        if loaded is not None and not description:
            description = str(loaded.meta.get("description", ""))
        self.entries[name] = Entry(name, description, source, loader, loaded, directory=directory)

    def add_broken(self, name: str, source: str, reason: str) -> None:
        """Remember a model that failed to load (shown in logs, never offered)."""
        self.entries[name] = Entry(name, "", source, error=reason)

    def warm_up(self) -> None:
        """Load every lazy entry (run in a worker thread after startup)."""
        for entry in list(self.entries.values()):
            if entry.loaded is None and entry.loader is not None:
                try:
                    entry.get()
                except Exception as error:  # noqa: BLE001 — a broken optional model must not stop the server
                    entry.error = f"{type(error).__name__}: {error}"
                    entry.loader = None

    def names(self) -> list[str]:
        return [name for name, entry in self.entries.items() if entry.error is None]

    def loaded_names(self) -> list[str]:
        return [name for name, entry in self.entries.items() if entry.loaded is not None]

    def is_loaded(self, name: str) -> bool:
        return name in self.entries and self.entries[name].loaded is not None

    @property
    def default(self) -> str | None:
        names = self.names()
        if self.default_name in names:
            return self.default_name
        return names[0] if names else None

    def get(self, name: str) -> LoadedModel:
        """The model called `name`, loading it now if it is lazy. KeyError for an unknown name."""
        entry = self.entries.get(name)
        if entry is None or entry.error is not None:
            raise KeyError(name)
        return entry.get()

    def description(self, name: str) -> str:
        return self.entries[name].description

    def directory(self, name: str) -> Path | None:
        return self.entries[name].directory
