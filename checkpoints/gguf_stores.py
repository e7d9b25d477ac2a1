"""Where desktop apps keep their GGUF files: Ollama's store and LM Studio's models folder.

Ollama: <root>/manifests/<host>/<namespace>/<model>/<tag> is a JSON manifest; its layer with mediaType
`application/vnd.ollama.image.model` names the GGUF blob, <root>/blobs/sha256-<hex>. The root is
$OLLAMA_MODELS, else ~/.ollama/models (the same on Linux, macOS and Windows; the Linux system service
uses /usr/share/ollama/.ollama/models). LM Studio: <root>/<publisher>/<repo>/*.gguf under
~/.lmstudio/models (older versions: ~/.cache/lm-studio/models).
Each function returns (name, path) pairs and (name, reason) pairs for what it had to skip.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

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
    `user/model:tag` becomes `model:tag`: model names hold no '/'), with the GGUF blob it runs."""
    manifests = root / "manifests"
    if not manifests.is_dir():
        return [], [(str(root), "no Ollama store here (no manifests folder)")]
    found: Found = []
    skipped: Skipped = []
    for manifest in sorted(p for p in manifests.glob("*/*/*/*") if p.is_file()):
        host, namespace, model, tag = manifest.relative_to(manifests).parts
        name = f"{model}:{tag}"
        if any(name == seen for seen, _ in found):
            skipped.append((name, f"another model already has this name ({host}/{namespace}/{model}:{tag})"))
            continue
        try:  # each manifest on its own: one bad file never stops the others
            found.append((name, ollama_blob(root, manifest)))
        except StoreEntryError as error:
            skipped.append((name, str(error)))
    return found, skipped


class StoreEntryError(ValueError):
    """One store entry cannot be offered; the message says why."""


def ollama_blob(root: Path, manifest: Path) -> Path:
    """The GGUF blob a manifest names, checked: a JSON object without duplicate keys, a `layers` list, one
    model layer, a digest of the form sha256:<64 hex> (nothing else can name a file inside the store)."""
    try:
        document = json.loads(manifest.read_text(encoding="utf-8"), object_pairs_hook=_no_duplicate_keys)
    except (OSError, ValueError) as error:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise StoreEntryError(f"unreadable manifest {manifest}: {error}") from error
    layers = document.get("layers") if isinstance(document, dict) else None
    if not isinstance(layers, list) or not all(isinstance(layer, dict) for layer in layers):
        raise StoreEntryError(f"its manifest {manifest} has no list of layers")
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
    blobs = (root / "blobs").resolve()
    blob = (blobs / digest.replace(":", "-")).resolve()
    if blob.parent != blobs:  # a symlink out of the store
        raise StoreEntryError(f"its model blob {blob} is outside the store's blobs folder")
    if not blob.is_file():
        raise StoreEntryError(f"its model blob {blob} is missing")
    return blob


def _no_duplicate_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    keys = [key for key, _ in pairs]
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:
        raise ValueError(f"the key {repeated[0]!r} appears twice")
    return dict(pairs)


def lmstudio_models(root: Path) -> tuple[Found, Skipped]:
    """Every .gguf under <root>/<publisher>/<repo>/, named by its file name without .gguf (vision projectors
    skipped)."""
    if not root.is_dir():
        return [], [(str(root), "no LM Studio models folder here")]
    found: Found = []
    skipped: Skipped = []
    for path in sorted(root.glob("*/*/*.gguf")):
        name = path.stem
        if path.name.startswith("mmproj"):
            skipped.append((name, "a vision projector, not a language model"))
            continue
        if any(name == seen for seen, _ in found):
            skipped.append((name, f"another file has this name ({path})"))
            continue
        found.append((name, path))
    return found, skipped
