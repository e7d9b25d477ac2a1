"""Where desktop apps keep their GGUF files: Ollama's store and LM Studio's models folder.

Ollama: <root>/manifests/<host>/<namespace>/<model>/<tag> is a JSON manifest; its layer with mediaType
`application/vnd.ollama.image.model` names the GGUF blob, <root>/blobs/sha256-<hex>. The root is
$OLLAMA_MODELS, else ~/.ollama/models (the same on Linux, macOS and Windows; the Linux system service
uses /usr/share/ollama/.ollama/models). LM Studio: <root>/<publisher>/<repo>/*.gguf under
~/.lmstudio/models (older versions: ~/.cache/lm-studio/models).
Each function returns (name, path) pairs and (name, reason) pairs for what it had to skip; every file is read
through checkpoints.store_files (resolved inside the store, bounded), and reasons name files store-relatively.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from checkpoints.store_files import (
    StoreEntryError,
    entries,
    inside,
    parse_json,
    read_bounded,
    real_root,
    regular_file,
    relative,
)

OLLAMA_MODEL_LAYER = "application/vnd.ollama.image.model"
OLLAMA_UNSUPPORTED_LAYERS = {
    "application/vnd.ollama.image.adapter": "a LoRA adapter layer",
    "application/vnd.ollama.image.projector": "a vision projector layer",
}

OLLAMA_DIGEST = re.compile(r"sha256[:-][0-9a-f]{64}")

Found = list[tuple[str, Path]]
Skipped = list[tuple[str, str]]


LINUX_SERVICE_STORE = Path("/usr/share/ollama/.ollama/models")  # Ollama's install script runs it as user `ollama`


def ollama_root() -> Path:
    """$OLLAMA_MODELS, else ~/.ollama/models, else the Linux system service's store when only that exists."""
    env = os.environ.get("OLLAMA_MODELS")
    if env:
        return Path(env).expanduser()
    home = Path.home() / ".ollama" / "models"
    return LINUX_SERVICE_STORE if not home.is_dir() and LINUX_SERVICE_STORE.is_dir() else home


def lmstudio_root() -> Path:
    for root in (Path.home() / ".lmstudio" / "models", Path.home() / ".cache" / "lm-studio" / "models"):
        if root.is_dir():
            return root
    return Path.home() / ".lmstudio" / "models"


def ollama_models(root: Path) -> tuple[Found, Skipped]:
    """Every model of an Ollama store, named as Ollama names it (`qwen2.5:0.5b`; outside Ollama's library,
    `user/model:tag` becomes `model:tag`: model names hold no '/'), with the GGUF blob it runs (resolved, inside
    the store). Every manifest is read through checkpoints.store_files' limits; whatever goes wrong with one, it is
    skipped with its reason (store-relative names only) and the others are still read."""
    store = real_root(root)
    manifests = root / "manifests"
    if not manifests.is_dir():
        return [], [(root.name, "no Ollama store here (no manifests folder)")]
    found: Found = []
    skipped: Skipped = []
    try:
        inside(store, manifests, "the folder")
    except StoreEntryError as error:
        return [], [(root.name, str(error))]
    for parts, real in entries(store, 5, under="manifests"):
        name = f"{parts[3]}:{parts[4]}" if len(parts) == 5 else "/".join(parts)
        if isinstance(real, StoreEntryError):
            skipped.append((name, str(real)))
            continue
        host, namespace, model, tag = parts[1:]
        if any(name == seen for seen, _ in found):
            skipped.append((name, f"another model already has this name ({host}/{namespace}/{model}:{tag})"))
            continue
        try:  # each manifest on its own: one bad file never stops the others, whatever it raises
            found.append((name, Path(ollama_blob(store, real))))
        except StoreEntryError as error:
            skipped.append((name, str(error)))
        except Exception as error:  # noqa: BLE001 — RecursionError, MemoryError, ...: this entry only
            skipped.append((name, f"its manifest cannot be read: {type(error).__name__}"))
    return found, skipped


def ollama_blob(store: str, manifest: str) -> str:
    """The GGUF blob a manifest names, checked: at most MAX_MANIFEST_BYTES, nesting at most MAX_JSON_DEPTH, a JSON
    object without duplicate keys, a `layers` list, one model layer, a digest of the form sha256:<64 hex> (nothing
    else can name a file inside the store), a regular file inside the store's blobs folder."""
    raw = read_bounded(store, manifest, "its manifest")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise StoreEntryError(f"unreadable manifest {relative(store, manifest)}: {error}") from error
    document = parse_json(text, f"manifest {relative(store, manifest)}", _no_duplicate_keys)
    layers = document.get("layers") if isinstance(document, dict) else None
    if not isinstance(layers, list) or not all(isinstance(layer, dict) for layer in layers):
        raise StoreEntryError(f"its manifest {relative(store, manifest)} has no list of layers")
    kinds = [layer.get("mediaType") for layer in layers]
    extra = [what for kind, what in OLLAMA_UNSUPPORTED_LAYERS.items() if kind in kinds]
    if extra:
        raise StoreEntryError(f"it has {' and '.join(extra)}, which is not implemented")
    models = [layer for layer in layers if layer.get("mediaType") == OLLAMA_MODEL_LAYER]
    if len(models) != 1:
        raise StoreEntryError(f"its manifest names {len(models)} model layers, not one")
    digest = models[0].get("digest")
    if not isinstance(digest, str) or not OLLAMA_DIGEST.fullmatch(digest):
        raise StoreEntryError(f"its model layer's digest {str(digest)[:80]!r} is not sha256:<64 hex digits>")
    blobs = inside(store, Path(store, "blobs"), "the folder")
    blob = os.path.realpath(Path(blobs, digest.replace(":", "-")))
    if os.path.dirname(blob) != blobs:  # a symlink out of the store (never opened)
        raise StoreEntryError(f"its model blob blobs/{digest.replace(':', '-')} is outside the store's blobs folder")
    if not os.path.lexists(blob):
        raise StoreEntryError(f"its model blob {relative(store, blob)} is missing")
    regular_file(store, blob, "its model blob")
    return blob


def _no_duplicate_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    keys = [key for key, _ in pairs]
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:
        raise ValueError(f"the key {repeated[0]!r} appears twice")
    return dict(pairs)


def lmstudio_models(root: Path) -> tuple[Found, Skipped]:
    """Every .gguf under <root>/<publisher>/<repo>/, named by its file name without .gguf (vision projectors
    skipped), resolved inside the folder: a link out of it (a file or a folder on the way) is refused without
    being opened, and so is anything that is not a regular file (a FIFO, a directory named .gguf)."""
    if not root.is_dir():
        return [], [(root.name, "no LM Studio models folder here")]
    store = real_root(root)
    found: Found = []
    skipped: Skipped = []
    for parts, real in entries(store, 3, keep=lambda name: name.endswith(".gguf")):
        name = parts[-1].removesuffix(".gguf") if len(parts) == 3 else "/".join(parts)
        if isinstance(real, StoreEntryError):
            skipped.append((name, str(real)))
            continue
        if parts[-1].startswith("mmproj"):
            skipped.append((name, "a vision projector, not a language model"))
            continue
        if any(name == seen for seen, _ in found):
            skipped.append((name, f"another file has this name ({'/'.join(parts)})"))
            continue
        try:
            regular_file(store, real, "the file")
        except StoreEntryError as error:
            skipped.append((name, str(error)))
            continue
        found.append((name, Path(real)))
    return found, skipped
