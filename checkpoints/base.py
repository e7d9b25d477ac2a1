"""What every checkpoint format shares: the loaded model, its errors, and building modules from a state dict."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

from model.config import TransformerConfig
from model.tokenizer import CharTokenizer, HubTokenizer
from model.transformer import Transformer, shared_weight_aliases

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


def read_weights(path: Path) -> StateDict:
    try:
        return load_file(str(path))
    except Exception as error:  # safetensors raises its own error types for corrupt files
        raise CheckpointError(f"{path.name} is not a readable safetensors file: {error}") from error


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
