"""Hugging Face checkpoints (GPT-2, Llama / Mistral / Qwen2 / Qwen3, Gemma 2 / Gemma 3 text, Phi-3 / Phi-4-mini,
StarCoder2, BERT) converted into this project's modules.

A directory's config.json names its family (`model_type`); the family's record (checkpoints/families/, HF_FAMILIES)
lists every config field its converter understands, and converts the config + state dict to a `TransformerConfig`
and our weight names. Any other field is refused unless it holds its default value
(checkpoints.base.refuse_unimplemented). `load_hf_directory` opens a whole directory (safetensors only, never
pickle).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from checkpoints.base import (
    WEIGHTS_FILE,
    CheckpointError,
    LoadedModel,
    StateDict,
    build_model,
    read_weights,
    refuse_unimplemented,
)
from checkpoints.families import HF_FAMILIES
from checkpoints.families.records import HfFamily
from checkpoints.file_precision import current_policy, in_file_precision
from checkpoints.hf_common import loader_name
from checkpoints.hf_tokenizer import load_hf_tokenizer
from model.config import ConfigError, TransformerConfig
from model.stored_weights import stored_nbytes


def check_hf_config(hf_config: dict[str, Any]) -> HfFamily:
    """The family's record, once every field of the config is one its converter implements (else CheckpointError)."""
    model_type = str(hf_config.get("model_type"))
    if model_type not in HF_FAMILIES:
        raise CheckpointError(f"unsupported architecture {model_type!r}; supported: {', '.join(sorted(HF_FAMILIES))}")
    family = HF_FAMILIES[model_type]
    refuse_unimplemented(hf_config, family.fields, loader_name(model_type))
    return family


def convert_hf(hf_config: dict[str, Any], state: StateDict) -> tuple[TransformerConfig, StateDict]:
    family = check_hf_config(hf_config)
    try:
        return family.convert(hf_config, state)
    except KeyError as error:
        raise CheckpointError(f"config.json lacks the field {error}") from error
    except ConfigError as error:
        raise CheckpointError(f"unsupported {family.model_type} configuration: {error}") from error


def load_hf_directory(directory: Path, hf_config: dict[str, Any], device: str | torch.device = "cpu") -> LoadedModel:
    """A Hugging Face-format directory: config.json (already read: `hf_config`) + model.safetensors + tokenizer."""
    weights = directory / WEIGHTS_FILE
    if not weights.is_file():
        raise CheckpointError(f"{directory} has no {WEIGHTS_FILE} (only safetensors weights are loaded, never pickles)")
    family = check_hf_config(hf_config)
    cfg, state = convert_hf(hf_config, read_weights(weights))
    policy = current_policy()  # above its float32 budget, float16/bfloat16 matrices stay so (file_precision.py)
    stored = policy.keeps_file_precision(sum(t.numel() for t in state.values()), device)
    model = build_model(cfg, in_file_precision(state) if stored else state, device)
    policy.report(1, 1)
    tokenizer = load_hf_tokenizer(directory, family.tokenizer)
    meta: dict[str, Any] = {"source": "huggingface", "model_type": family.model_type}
    if stored:
        meta["weights_in_memory"] = {"kept": "file precision", **stored_nbytes(model)}
    return LoadedModel(model, tokenizer, meta)
