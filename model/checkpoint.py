"""Checkpoints in this project's format: safetensors weights + JSON config and meta (never pickle).

`load_checkpoint` also opens Hugging Face directories (GPT-2, Llama/Qwen2 family, BERT),
converted by `model.hf`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from model.config import ConfigError, TransformerConfig
from model.tokenizer import CharTokenizer, HubTokenizer, load_tokenizer
from model.transformer import Transformer, distinct_state_dict, shared_weight_aliases

StateDict = dict[str, torch.Tensor]
Tokenizer = CharTokenizer | HubTokenizer

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"


class CheckpointError(ValueError):
    """A checkpoint directory that cannot be loaded; the message says what is wrong."""


@dataclass
class LoadedModel:
    model: Transformer
    tokenizer: Tokenizer
    meta: dict[str, Any]  # description, source, training figures ...


# ---------------------------------------------------------------- this project's format


def read_weights(path: Path) -> StateDict:
    try:
        return load_file(str(path))
    except Exception as error:  # safetensors raises its own error types for corrupt files
        raise CheckpointError(f"{path.name} is not a readable safetensors file: {error}") from error


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
    document = {"format": "transformer-explorer", "config": model.cfg.to_dict(), "meta": meta or {}}
    (directory / CONFIG_FILE).write_text(json.dumps(document, indent=2, ensure_ascii=False), encoding="utf-8")
    tokenizer.save(directory)


def build_model(cfg: TransformerConfig, state: StateDict, device: str | torch.device = "cpu") -> Transformer:
    """Instantiate the modules for cfg and load a state dict into them, checking every shape."""
    model = Transformer(cfg)
    expected = model.state_dict()
    for name, tensor in state.items():
        if name not in expected:
            raise CheckpointError(f"unexpected weight {name!r} for this configuration")
        if tuple(tensor.shape) != tuple(expected[name].shape):
            raise CheckpointError(
                f"weight {name!r} has shape {list(tensor.shape)}, the config expects {list(expected[name].shape)}"
            )
    # a tensor shared by several names (tied W_U, the decoder's W_E in encoder-decoder models) is saved once
    shared = {
        name
        for alias, owner in shared_weight_aliases(model).items()
        if alias in state or owner in state
        for name in (alias, owner)
    }
    missing = sorted(set(expected) - set(state) - shared)
    if missing:
        raise CheckpointError(f"missing weights: {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}")
    model.load_state_dict({k: v.to(torch.float32) for k, v in state.items()}, strict=False)
    return model.to(device).eval()


def load_checkpoint(directory: Path, device: str | torch.device = "cpu") -> LoadedModel:
    """Load a directory in this project's format or a Hugging Face one (GPT-2, Llama/Qwen2, BERT)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise CheckpointError(f"{directory} is not a directory")
    config_path = directory / CONFIG_FILE
    if not config_path.is_file():
        raise CheckpointError(f"{directory} has no {CONFIG_FILE}")
    try:
        document = json.loads(config_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise CheckpointError(f"{config_path} is not valid JSON: {error}") from error
    if document.get("format") != "transformer-explorer":
        from model.hf import load_hf_directory  # model.hf builds on this module

        return load_hf_directory(directory, device)
    weights = directory / WEIGHTS_FILE
    if not weights.is_file():
        raise CheckpointError(f"{directory} has no {WEIGHTS_FILE}")
    if not (directory / "tokenizer.json").is_file():
        raise CheckpointError(f"{directory} has no tokenizer.json")
    try:
        cfg = TransformerConfig.from_dict(document["config"])
    except (ConfigError, TypeError) as error:
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
