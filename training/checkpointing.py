"""Training checkpoints (resume) and float16 snapshots, as safetensors + JSON, never pickle."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from model.transformer import Transformer, distinct_state_dict


class DrawsData(Protocol):
    """Whatever draws the training batches: its RNG is saved so a resumed run draws the same ones.

    The language model's Batcher holds a numpy Generator, the translator's task a random.Random.
    """

    @property
    def rng(self) -> np.random.Generator | random.Random: ...


def data_rng_state(rng: np.random.Generator | random.Random) -> Any:
    """The RNG's state as JSON values (random.Random's tuples become lists)."""
    if isinstance(rng, random.Random):
        return rng.getstate()
    return rng.bit_generator.state


def restore_data_rng(rng: np.random.Generator | random.Random, saved: Any) -> None:
    """Put back a state from data_rng_state, read back from JSON."""
    if isinstance(rng, random.Random):
        version, internal, gauss_next = saved
        rng.setstate((version, tuple(internal), gauss_next))  # setstate wants the tuple getstate gave
    else:
        rng.bit_generator.state = saved


def save_training_state(
    directory: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer, data: DrawsData, state: dict[str, Any]
) -> None:
    """OUT/checkpoint: weights, optimizer moments + torch RNG (safetensors), and state.json.

    state.json holds `state` (step, tokens seen, history, ...), the optimizer's param groups and
    the RNG of `data`. Each file is written beside its old copy and renamed, so a crash keeps the last one.
    """
    directory.mkdir(parents=True, exist_ok=True)
    weights = {name: t.detach().cpu().contiguous() for name, t in distinct_state_dict(model).items()}
    save_file(weights, str(directory / "weights.safetensors.tmp"))
    opt_state = optimizer.state_dict()
    tensors: dict[str, torch.Tensor] = {}
    for index, param_state in opt_state["state"].items():
        for key, value in param_state.items():
            value = value if torch.is_tensor(value) else torch.tensor(value)
            tensors[f"{index}.{key}"] = value.detach().cpu().contiguous()
    tensors["torch_rng"] = torch.get_rng_state()
    save_file(tensors, str(directory / "optimizer.safetensors.tmp"))
    document = dict(state)
    document["param_groups"] = opt_state["param_groups"]
    document["data_rng"] = data_rng_state(data.rng)
    (directory / "state.json.tmp").write_text(json.dumps(document, indent=1), encoding="utf-8")
    for name in ("weights.safetensors", "optimizer.safetensors", "state.json"):
        (directory / f"{name}.tmp").replace(directory / name)


def load_training_state(
    directory: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer, data: DrawsData
) -> dict[str, Any]:
    """Restore what save_training_state wrote into model, optimizer and data's RNG; returns the state."""
    document = json.loads((directory / "state.json").read_text(encoding="utf-8"))
    model.load_state_dict(load_file(str(directory / "weights.safetensors")), strict=False)
    tensors = load_file(str(directory / "optimizer.safetensors"))
    torch.set_rng_state(tensors.pop("torch_rng"))
    per_param: dict[int, dict[str, torch.Tensor]] = {}
    for key, value in tensors.items():
        index, name = key.split(".", 1)
        per_param.setdefault(int(index), {})[name] = value
    optimizer.load_state_dict({"state": per_param, "param_groups": document.pop("param_groups")})
    restore_data_rng(data.rng, document.pop("data_rng"))
    return document


def rounded_copy(model: Transformer, dtype: torch.dtype) -> Transformer:
    """The model as it will be shipped: weights rounded to dtype (and back to float32)."""
    shipped = copy.deepcopy(model)
    with torch.no_grad():
        for p in shipped.parameters():
            p.copy_(p.to(dtype).float())
    return shipped.eval()


def save_snapshot(model: Transformer, directory: Path, step: int) -> str:
    """The weights at `step` in float16, as directory/snapshots/step-NNNNNN.safetensors; returns that relative path."""
    relative = f"snapshots/step-{step:06d}.safetensors"
    (directory / "snapshots").mkdir(parents=True, exist_ok=True)
    weights = {name: t.detach().to("cpu", torch.float16).contiguous() for name, t in distinct_state_dict(model).items()}
    save_file(weights, str(directory / relative))
    return relative
