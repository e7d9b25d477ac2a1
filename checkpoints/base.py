"""What every checkpoint format shares: the loaded model, its errors, and building modules from a state dict."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

from checkpoints.finite import nonfinite_weight
from model.config import TransformerConfig
from model.tokenizer import CharTokenizer, HubTokenizer
from model.transformer import Transformer, shared_weight_aliases

StateDict = dict[str, torch.Tensor]
Tokenizer = CharTokenizer | HubTokenizer

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"


class CheckpointError(ValueError):
    """A checkpoint directory that cannot be loaded; the message says what is wrong."""


@dataclass(frozen=True)
class ConfigFields:
    """What one loader understands of a config: every field is in one of the three, or it is refused.

    read:     implemented; the converter turns it into the model (tested for parity)
    inert:    changes no number the model computes (dropout, token ids, initialisation, labels, output flags)
    defaults: changes the computation and is not implemented: accepted only while it holds this value
    """

    read: frozenset[str]
    inert: frozenset[str]
    defaults: Mapping[str, Any]

    def __or__(self, other: ConfigFields) -> ConfigFields:
        return ConfigFields(self.read | other.read, self.inert | other.inert, {**self.defaults, **other.defaults})

    @property
    def understood(self) -> frozenset[str]:
        return self.read | self.inert


def refuse_unimplemented(config: Mapping[str, Any], fields: ConfigFields, loader: str) -> None:
    """Raise CheckpointError naming the first field this loader would silently get wrong.

    A field is accepted when it is read or inert, or when it holds its default value; any other
    field, known or not, is refused with its name and value.
    """
    for name, value in config.items():
        if name in fields.understood:
            continue
        if name in fields.defaults:
            if value != fields.defaults[name]:
                raise CheckpointError(
                    f"{loader}: config field {name} = {value!r} is not implemented "
                    f"(only {fields.defaults[name]!r} is); the numbers would not be the model's"
                )
            continue
        raise CheckpointError(
            f"{loader}: config field {name} = {value!r} is not one this loader knows; "
            "it may change the computation, so the model is not loaded"
        )


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
    """Instantiate the modules for cfg and load a state dict into them, checking every shape.

    The modules are built on the meta device and take the state's tensors as their parameters
    (`assign=True`), so the weights exist once: no random initialisation is computed and then
    overwritten, which for a 135M-parameter model would hold two copies (1 GB) at the peak.
    A weight holding NaN or Inf is refused with its name (checkpoints.finite).
    """
    with torch.device("meta"):
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
    aliases = shared_weight_aliases(model)
    shared = {name for alias, owner in aliases.items() if alias in state or owner in state for name in (alias, owner)}
    missing = sorted(set(expected) - set(state) - shared)
    if missing:
        raise CheckpointError(f"missing weights: {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}")
    # contiguous: a converter may hand over transposed views (GPT-2's Conv1D), which copying used to fix
    tensors = {name: tensor.to(torch.float32).contiguous() for name, tensor in state.items()}
    nonfinite = nonfinite_weight(tensors)  # a NaN or Inf weight is refused by name, in every format
    if nonfinite is not None:
        raise CheckpointError(nonfinite)
    for alias, owner in aliases.items():  # the owner's tensor wins, as when loading copied into one tensor
        if owner not in tensors:
            tensors[owner] = tensors[alias]
        tensors.pop(alias, None)
    model.load_state_dict(tensors, strict=False, assign=True)
    for alias, owner in aliases.items():  # assign=True replaced the owner's Parameter: tie the alias again
        module_name, _, leaf = alias.rpartition(".")
        setattr(model.get_submodule(module_name), leaf, model.get_parameter(owner))
    left = [name for name, tensor in [*model.named_parameters(), *model.named_buffers()] if tensor.is_meta]
    if left:
        raise CheckpointError(f"missing weights: {', '.join(left[:5])}")
    return model.to(device).eval()
