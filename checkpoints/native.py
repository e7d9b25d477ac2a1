"""Checkpoints in this project's format: safetensors weights + JSON config and meta (never pickle)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file

from checkpoints.base import (
    CONFIG_FILE,
    WEIGHTS_FILE,
    CheckpointError,
    LoadedModel,
    StateDict,
    Tokenizer,
    build_model,
    read_weights,
)
from model.config import ConfigError, TransformerConfig
from model.tokenizer import load_tokenizer
from model.transformer import Transformer, distinct_state_dict

FORMAT = "transformer-explorer"


def save_checkpoint(
    directory: Path,
    model: Transformer,
    tokenizer: Tokenizer,
    meta: dict[str, Any] | None = None,
    dtype: torch.dtype = torch.float32,
) -> None:
    """Write config.json (config + meta), model.safetensors and tokenizer.json."""
    directory.mkdir(parents=True, exist_ok=True)
    state: StateDict = {
        name: tensor.detach().to("cpu", dtype).contiguous() for name, tensor in distinct_state_dict(model).items()
    }
    save_file(state, str(directory / WEIGHTS_FILE))
    document = {"format": FORMAT, "config": model.cfg.to_dict(), "meta": meta or {}}
    (directory / CONFIG_FILE).write_text(json.dumps(document, indent=2, ensure_ascii=False), encoding="utf-8")
    tokenizer.save(directory)


def load_native(directory: Path, document: dict[str, Any], device: str | torch.device = "cpu") -> LoadedModel:
    """A directory in this project's format, whose config.json (already read) is `document`."""
    config_path = directory / CONFIG_FILE
    weights = directory / WEIGHTS_FILE
    if not weights.is_file():
        raise CheckpointError(f"{directory} has no {WEIGHTS_FILE}")
    if not (directory / "tokenizer.json").is_file():
        raise CheckpointError(f"{directory} has no tokenizer.json")
    try:
        cfg = TransformerConfig.from_dict(document["config"])
    except (ConfigError, TypeError, KeyError) as error:
        raise CheckpointError(f"bad config in {config_path}: {error}") from error
    model = build_model(cfg, read_weights(weights), device)
    return LoadedModel(model, load_tokenizer(directory), document.get("meta", {}))


def load_snapshot(
    directory: Path, file: str, cfg: TransformerConfig, device: str | torch.device = "cpu"
) -> Transformer:
    """Weights saved during training (a file the checkpoint's meta lists), for the same config."""
    path = (Path(directory) / file).resolve()
    if not path.is_relative_to(Path(directory).resolve()) or not path.is_file():
        raise CheckpointError(f"snapshot {file!r} is not a file inside {directory}")
    return build_model(cfg, read_weights(path), device)
