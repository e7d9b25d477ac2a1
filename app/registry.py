"""The models a server offers, by name: name -> loaded model, and nothing else.

Clients choose a name; they never send a path. Entries are filled by `app.catalogue`
(shipped weights, packages, the operator's --add-model) or by tests. An entry may load
lazily (on first use, once) and may be broken (kept with its reason, never offered).

What was found but is not offered stays visible, with its reason (`refusals`, served in GET /api/health):
a broken entry (a half-written shipped checkpoint, a lazy model whose first load failed) and a store file
refused before it became an entry (`add_refused`). A refusal never replaces a working entry of the same
name: an Ollama tag refused as a duplicate must not hide the model that holds the name.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

from app.model_words import word_meta
from checkpoints import LoadedModel
from checkpoints.file_precision import load_policy

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
    float32_budget: int | None = None  # bytes of float32 weights; a bigger model keeps its file's precision
    # loads for a minute or more (a file over the float32 budget): a request waits for it only load_wait_s, then
    # hears how far it is (503), and GET /api/models lists the others without it meanwhile; a small lazy model
    # (smollm2, a store's 0.5B) is waited for, as before
    large: bool = False
    progress: tuple[int, int] | None = None  # (done, total) tensors while it loads; None when it is not loading
    loading_thread: Future[LoadedModel] | None = None  # the load started by start_loading, if any

    def report(self, done: int, total: int) -> None:
        self.progress = (done, total)

    def get(self) -> LoadedModel:
        """Load on first use (once, even when many requests arrive together). A load that fails makes the entry
        broken, with the failure as its reason: it is not tried again, and it is listed among the refusals."""
        if self.loaded is None:
            with self.lock:
                if self.loaded is None and self.loader is not None:
                    self.progress = (0, 1)
                    try:
                        with load_policy(self.float32_budget, self.report):
                            self.loaded = self.loader()
                        if self.loaded is not None:
                            word_meta(self.loaded.meta)  # the loader's facts, worded (app/model_words.py)
                    except Exception as error:  # noqa: BLE001 — a model that cannot load must not stop the server
                        self.error = f"{type(error).__name__}: {error}"
                        self.loader = None
                    else:
                        if self.loaded is None:
                            self.error = "its loader found nothing to load"
                            self.loader = None
                    finally:
                        self.progress = None
        if self.loaded is None:
            raise RegistryError(f"model {self.name!r} could not be loaded: {self.error or 'it has no weights'}")
        return self.loaded


@dataclass(frozen=True)
class Refusal:
    """A model found but not offered: its name, where it was found, and why."""

    name: str
    source: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "source": self.source, "reason": self.reason}


class Registry:
    def __init__(self, default: str | None = None, device: str = "cpu", float32_budget: int | None = None) -> None:
        self.entries: dict[str, Entry] = {}
        self.refused: list[Refusal] = []  # found, never an entry (a store file the loader does not support)
        self.default_name = default
        self.device = device
        self.float32_budget = float32_budget  # None: checkpoints.file_precision's default
        self._starting = threading.Lock()

    def add(self, name: str, loaded: LoadedModel | None = None, *,
            loader: Callable[[], LoadedModel | None] | None = None, description: str = "", source: str = "operator",
            directory: Path | None = None, large: bool = False) -> None:
        if not NAME_PATTERN.match(name):
            raise RegistryError(f"model name {name!r} must be 1-64 letters, digits, '.', '_', ':' or '-'")
        if loaded is not None:
            word_meta(loaded.meta)  # the loader's facts, worded (app/model_words.py)
        if loaded is not None and not description:
            description = str(loaded.meta.get("description", ""))
        self.entries[name] = Entry(name, description, source, loader, loaded, directory=directory,
                                   float32_budget=self.float32_budget, large=large)

    def add_broken(self, name: str, source: str, reason: str) -> None:
        """Remember a model that failed to load (listed with its reason, never offered). It never replaces a
        working entry of the same name."""
        entry = self.entries.get(name)
        if entry is not None and entry.error is None:
            self.add_refused(name, source, reason)
        else:
            self.entries[name] = Entry(name, "", source, error=reason)

    def add_refused(self, name: str, source: str, reason: str) -> None:
        """Remember something found but not offered (a store file the loader refuses), beside the entries."""
        self.refused.append(Refusal(name, source, reason))

    def refusals(self) -> list[Refusal]:
        """Every model found but not offered, with why: broken entries first (registry order), then the others."""
        broken = [Refusal(entry.name, entry.source, entry.error) for entry in self.entries.values()
                  if entry.error is not None]
        return broken + self.refused

    def refusal(self, name: str) -> Refusal | None:
        """Why `name` is not offered, when it was found and refused (and no working model holds the name)."""
        if name in self.names():
            return None
        return next((r for r in self.refusals() if r.name == name), None)

    def warm_up(self) -> None:
        """Load every lazy entry (run in a worker thread after startup); one that fails is kept as broken, with its
        reason (Entry.get)."""
        for entry in list(self.entries.values()):
            if entry.loaded is None and entry.loader is not None:
                with contextlib.suppress(RegistryError):  # entry.error says why
                    entry.get()

    def start_loading(self, name: str) -> Future[LoadedModel]:
        """Load a lazy entry in a thread of its own (never the event loop, never an inference worker): the future of
        its LoadedModel, the same one for every caller. Entry.get's lock makes it wait for a warm-up loading it."""
        entry = self.entries[name]
        with self._starting:  # never entry.lock: a warm-up may hold it for minutes, and this runs on the event loop
            if entry.loading_thread is None:
                future: Future[LoadedModel] = Future()

                def load() -> None:
                    try:
                        future.set_result(entry.get())
                    except BaseException as error:  # noqa: BLE001 — handed to whoever awaits the future
                        future.set_exception(error)

                entry.loading_thread = future
                threading.Thread(target=load, name=f"load-{name}", daemon=True).start()
        return entry.loading_thread

    def loading(self) -> list[tuple[str, int, int]]:
        """(name, done, total) of every model loading now."""
        return [(entry.name, *entry.progress) for entry in list(self.entries.values()) if entry.progress is not None]

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
