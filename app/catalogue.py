"""What a server offers at startup, from its settings: shipped weights, package models, --add-model.

A broken shipped checkpoint (for instance one being written by a training run) is kept
with its reason and not offered; a broken operator model is a startup error.
"""

from __future__ import annotations

from pathlib import Path

from app.registry import Registry, RegistryError
from app.settings import Settings
from checkpoints import CheckpointError, load_checkpoint, pretrained
from model.device import pick_device


def build_registry(settings: Settings) -> Registry:
    try:
        device = str(pick_device(settings.device))  # "auto": CUDA when present, else CPU
    except (ValueError, RuntimeError) as error:
        raise RegistryError(f"--device {settings.device}: {error}") from error
    registry = Registry(default=settings.default_model, device=device)
    weights_dir = Path(settings.weights_dir)
    if weights_dir.is_dir():
        for directory in sorted(p for p in weights_dir.iterdir() if (p / "config.json").is_file()):
            try:
                add_directory(registry, directory.name, directory, source="weights")
            except RegistryError as error:
                registry.add_broken(directory.name, "weights", str(error))
    if settings.load_minilm:
        add_minilm(registry)
    for spec in settings.add_models:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise RegistryError(f"--add-model expects NAME=DIR, got {spec!r}")
        add_directory(registry, name.strip(), Path(path).expanduser())
    return registry


def add_directory(registry: Registry, name: str, directory: Path, source: str = "operator") -> None:
    """Load a checkpoint now, turning any failure into one readable RegistryError."""
    try:
        loaded = load_checkpoint(directory, registry.device)
    except CheckpointError as error:
        raise RegistryError(f"cannot load model {name!r} from {directory}: {error}") from error
    except (OSError, ValueError, KeyError, TypeError, RuntimeError) as error:
        reason = f"{type(error).__name__}: {error}"
        raise RegistryError(f"cannot load model {name!r} from {directory}: {reason}") from error
    registry.add(name, loaded, source=source, directory=directory)


def add_minilm(registry: Registry) -> None:
    """all-MiniLM-L6-v2 when its package is installed, loaded lazily (in the background after startup)
    through checkpoints.pretrained, so the served model carries the same meta, head labels included."""
    if pretrained.minilm_path() is None:
        return
    device = registry.device
    registry.add("minilm", loader=lambda: pretrained.minilm(device), description=pretrained.MINILM_META["description"],
                 source="package")
