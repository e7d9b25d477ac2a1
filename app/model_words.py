"""The sentences said about a model, worded from the facts its loader returns: the one place that words them, in
English and Chinese, from static/text/<lang>.json `models`.

A loader (checkpoints/) returns facts only: a GGUF file's architecture, file name, tensor types and context cut
(checkpoints/gguf_metadata.py), a package model's name (checkpoints/pretrained.py). The registry words a model's
meta when the model arrives, so GET /api/models keeps its `description` (English, for API users) and the page its
`meta.description_zh`. A meta that already holds a description (a trained model's own files) is left as it is.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# the description in each language: the meta key it goes to
DESCRIPTION_KEYS = {"en": "description", "zh": "description_zh"}
FULL_PRECISION = frozenset({"F32", "F64"})


@cache
def texts(lang: str) -> tuple[dict[str, str], str]:
    """static/text/<lang>.json's `models` words, and the separator between two sentences."""
    document = json.loads((ROOT / "static" / "text" / f"{lang}.json").read_text(encoding="utf-8"))
    return document["models"], document["separator"]


def quantized(meta: dict[str, Any]) -> bool:
    """Whether the weights are not all float32: the file's tensor types, or the package file's type."""
    types = set(meta.get("tensor_types") or {}) | ({meta["file_type"]} if "file_type" in meta else set())
    return not types <= FULL_PRECISION


def describe(meta: dict[str, Any], lang: str) -> str:
    """The model's description in `lang`, from its facts; "" when they say nothing to word."""
    words, separator = texts(lang)
    package = words.get(f"package_{meta.get('name')}")
    sentences: list[str] = []
    if package is not None:
        sentences.append(package)
    elif "gguf_architecture" in meta:
        counts = sorted((meta.get("tensor_types") or {}).items(), key=lambda item: -item[1])
        name = meta.get("model_name") or Path(str(meta["file_name"])).stem
        sentences.append(words["gguf_file"].format(name=name, arch=meta["gguf_architecture"], file=meta["file_name"],
                                                   types=", ".join(f"{count} {kind}" for kind, count in counts)))
    else:
        return ""
    if quantized(meta):  # why llama.cpp (Ollama, LM Studio) shows slightly other probabilities for the same file
        sentences.append(words["precision_note"])
    if package is None and "context_cap" in meta:
        sentences.append(words["context_cut"].format(context=meta["context_length"], cap=meta["context_cap"]))
    return separator.join(sentences)


def word_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """Add the description in each language to `meta` (in place, and returned), unless it holds one already."""
    if "description" in meta:
        return meta
    worded = {key: text for lang, key in DESCRIPTION_KEYS.items() if (text := describe(meta, lang))}
    facts = dict(meta)
    meta.clear()
    meta.update(worded | facts)  # the descriptions first, where the loaders used to put them
    return meta
