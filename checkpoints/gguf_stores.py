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
from pathlib import Path

OLLAMA_MODEL_LAYER = "application/vnd.ollama.image.model"
OLLAMA_UNSUPPORTED_LAYERS = {
    "application/vnd.ollama.image.adapter": "a LoRA adapter layer",
    "application/vnd.ollama.image.projector": "a vision projector layer",
}

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
        try:
            layers = json.loads(manifest.read_text(encoding="utf-8")).get("layers", [])
        except (OSError, ValueError, AttributeError) as error:
            skipped.append((name, f"unreadable manifest {manifest}: {error}"))
            continue
        kinds = {layer.get("mediaType") for layer in layers if isinstance(layer, dict)}
        extra = [what for kind, what in OLLAMA_UNSUPPORTED_LAYERS.items() if kind in kinds]
        if extra:
            skipped.append((name, f"it has {' and '.join(extra)}, which is not implemented"))
            continue
        models = [layer for layer in layers if isinstance(layer, dict) and layer.get("mediaType") == OLLAMA_MODEL_LAYER]
        if len(models) != 1:
            skipped.append((name, f"its manifest names {len(models)} model layers, not one"))
            continue
        blob = root / "blobs" / str(models[0].get("digest", "")).replace(":", "-")
        if not blob.is_file():
            skipped.append((name, f"its model blob {blob} is missing"))
            continue
        found.append((name, blob))
    return found, skipped


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
