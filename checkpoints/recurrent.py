"""The recurrent language model's files (model/recurrent.py): recurrent.safetensors, recurrent.json, tokenizer.json.

Its folder has no config.json, so the catalogue (which serves Transformers) does not list it; the lab's
recurrence experiment loads it from here. Written by `python -m training.recurrent --ship DIR`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from safetensors.torch import load_file

from checkpoints.base import CheckpointError
from model.recurrent import RecurrentConfig, RecurrentLM
from model.tokenizer import CharTokenizer, HubTokenizer, load_tokenizer

FORMAT = "recurrent-lm"
SHIPPED = Path(__file__).resolve().parents[1] / "model" / "weights" / "recurrent-gru"


@dataclass(frozen=True)
class LoadedRecurrent:
    model: RecurrentLM
    tokenizer: CharTokenizer | HubTokenizer
    meta: dict[str, Any]


def load_recurrent(directory: Path = SHIPPED) -> LoadedRecurrent:
    """The model in `directory`, in eval mode on the CPU; a CheckpointError names what is missing or unknown."""
    config_path, weights_path = directory / "recurrent.json", directory / "recurrent.safetensors"
    for path in (config_path, weights_path, directory / "tokenizer.json"):
        if not path.is_file():
            raise CheckpointError(f"{directory} has no {path.name} (python -m training.recurrent --ship writes it)")
    document = json.loads(config_path.read_text(encoding="utf-8"))
    if document.get("format") != FORMAT:
        raise CheckpointError(f"{config_path} is not a {FORMAT} file")
    known = {f.name for f in fields(RecurrentConfig)}
    unknown = sorted(set(document["config"]) - known)
    if unknown:  # a field this code does not implement would change the numbers
        raise CheckpointError(f"{config_path}: unknown config fields {', '.join(unknown)}")
    model = RecurrentLM(RecurrentConfig(**document["config"]))
    state = load_file(str(weights_path))
    expected = {name: tuple(t.shape) for name, t in model.state_dict().items()}
    found = {name: tuple(t.shape) for name, t in state.items()}
    if expected != found:
        wrong = sorted(set(expected.items()) ^ set(found.items()))
        raise CheckpointError(f"{weights_path}: weights do not match the config ({wrong[:3]})")
    model.load_state_dict({name: t.float() for name, t in state.items()})
    return LoadedRecurrent(model.eval(), load_tokenizer(directory), document.get("meta", {}))
