"""A GGUF file's metadata: read it, find its family record (checkpoints/families/), refuse what the loader does not
implement, map it to a TransformerConfig (the record's `config`), and say what the file is, as facts.

Policy: a key under `{arch}.` is either used (one of the record's `keys`: it sets a config field), or checked to
hold the one value that changes nothing (`rope.scaling.type = "none"`, `expert_count = 0`, ...), or refused by
name. A model never loads with silently different numbers.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any

from checkpoints.base import CheckpointError
from checkpoints.families import GGUF_FAMILIES
from checkpoints.families.records import GgufFamily
from checkpoints.gguf_read import Factors, GgufRead, head_size, shown
from model.config import TransformerConfig

# RoPE scaling types the loader implements: none, and linear (every pair rope.scaling.factor times slower). Llama
# 3.1's scaling has no key: llama.cpp's converter stores it as the tensor rope_freqs (one factor per pair)
ROPE_SCALING_TYPES = ("none", "linear")

# keys accepted only with the value that leaves the computation as implemented; what each one would change
NEUTRAL_VALUES: dict[str, tuple[tuple[Any, ...], str]] = {
    "rope.scaling.attn_factor": ((1.0,), "RoPE attention factor"),
    "expert_count": ((0,), "mixture of experts"),
    "expert_used_count": ((0,), "mixture of experts"),
    "attention.causal": ((True,), "non-causal attention"),
    "logit_scale": ((1.0,), "final logit scaling"),
    "attn_logit_softcapping": ((0.0,), "attention logit soft-capping"),
    "final_logit_softcapping": ((0.0,), "final logit soft-capping"),
    "embedding_scale": ((1.0,), "embedding scaling"),
    "residual_scale": ((1.0,), "residual scaling"),
    "use_parallel_residual": ((False,), "parallel attention/MLP residual"),
}
# keys whose value must equal the head size: anything else is partial rotary or a separate head size
HEAD_SIZE_KEYS = {
    "rope.dimension_count": "partial rotary embedding (RoPE on part of each head)",
    "attention.key_length": "a key/query head size other than the head size",
    "attention.value_length": "a value head size other than the key/query head size (attention.key_length)",
}
# informative for the scaling types implemented (llama.cpp reads them for YaRN only)
ROPE_SCALING_INFO = ("rope.scaling.original_context_length", "rope.scaling.finetuned")
# what some refused keys are, for the message
REFUSED_WHAT = {
    "attention.sliding_window": "sliding-window attention",
    "attention.sliding_window_pattern": "sliding-window attention",
    "rope.freq_base_swa": "sliding-window attention",
    "attention.scale": "attention scaling",
    "attention.clamp_kqv": "clamped Q/K/V",
    "attention.max_alibi_bias": "ALiBi",
    "rope.dimension_sections": "multimodal RoPE sections",
    "expert_shared_count": "mixture of experts",
    "expert_feed_forward_length": "mixture of experts",
}
IGNORED_PREFIXES = ("general.", "tokenizer.", "quantize.", "GGUF.")


def read_metadata(reader: Any, file_name: str) -> dict[str, Any]:
    """Every key/value of the file as Python values (strings, numbers, lists)."""
    metadata: dict[str, Any] = {}
    for name, field in reader.fields.items():
        try:
            metadata[name] = field.contents()
        except (UnicodeDecodeError, ValueError, IndexError) as error:
            raise CheckpointError(f"{file_name}: metadata key {name!r} is unreadable: {error}") from error
    if "general.architecture" not in metadata:
        raise CheckpointError(f"{file_name} has no general.architecture: not a model file")
    return metadata


def family_of(metadata: dict[str, Any]) -> GgufFamily:
    """The record of the file's general.architecture (checkpoints/families/), or CheckpointError naming it."""
    arch = str(metadata.get("general.architecture"))
    if arch not in GGUF_FAMILIES:
        raise CheckpointError(
            f"unsupported architecture general.architecture = {arch!r}; supported: {', '.join(GGUF_FAMILIES)}"
        )
    kind = metadata.get("general.type", "model")
    if kind != "model":
        raise CheckpointError(f"general.type = {kind!r}: only model files are loaded (not adapters or projectors)")
    return GGUF_FAMILIES[arch]


def check_understood(metadata: dict[str, Any]) -> None:
    """Refuse, naming the key, every metadata key that would change the computation and is not implemented."""
    family = family_of(metadata)
    prefix = family.arch + "."
    size = head_size(metadata, family.arch)
    scaling = metadata.get(prefix + "rope.scaling.type", "none")
    if scaling not in ROPE_SCALING_TYPES or (scaling != "none" and not family.rope_scaling):
        raise CheckpointError(f"{prefix}rope.scaling.type = {shown(scaling)} (RoPE scaling) is not implemented "
                              f"(implemented: {', '.join(ROPE_SCALING_TYPES)}, and Llama 3.1's rope_freqs)")
    for key, value in metadata.items():
        if key.startswith(IGNORED_PREFIXES):
            continue
        if key.startswith("split."):
            raise CheckpointError(f"{key} = {value!r}: split GGUF files (one model in several files) are not supported")
        if not key.startswith(prefix):
            raise CheckpointError(f"metadata key {key} = {shown(value)} is not understood by this loader")
        name = key[len(prefix):]
        if name in family.keys:
            continue
        if name in NEUTRAL_VALUES:
            allowed, what = NEUTRAL_VALUES[name]
            if value not in allowed:
                raise CheckpointError(f"{key} = {shown(value)} ({what}) is not implemented")
            continue
        if name in HEAD_SIZE_KEYS:
            if int(value) != size:
                raise CheckpointError(
                    f"{key} = {value}, but the head size is {size}: {HEAD_SIZE_KEYS[name]} is not implemented"
                )
            continue
        if name in ROPE_SCALING_INFO or name == "rope.scaling.type":
            continue
        if name == "rope.scaling.factor":
            if scaling != "linear" and value not in (0.0, 1.0):
                raise CheckpointError(f"{key} = {shown(value)} (RoPE scaling) is not implemented without "
                                      f"{prefix}rope.scaling.type = 'linear'")
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise CheckpointError(f"{key} = {shown(value)} (RoPE scaling) must be a number >= 0")
            continue
        what = REFUSED_WHAT.get(name, "a setting this loader does not implement")
        raise CheckpointError(f"{key} = {shown(value)} ({what}) changes the computation and is not implemented")


def gguf_config(metadata: dict[str, Any], tied: bool, factors: dict[str, Factors | None],
                tensor_names: frozenset[str] = frozenset()) -> TransformerConfig:
    """The TransformerConfig the metadata describes (after check_understood), as the file's family record builds
    it; factors: the RoPE factor tensors the family reads (GgufFamily.factor_tensors), None for each the file
    lacks."""
    family = family_of(metadata)
    return family.config(GgufRead(metadata, family.arch, tied, factors, family.context_cap, tensor_names))


def model_meta(metadata: dict[str, Any], path: Path, tensor_types: Counter[str]) -> dict[str, Any]:
    """What the file says about itself, as facts: its name, architecture, license, tensor types, context (and the
    cut this server makes). app/model_words.py words them, in English and Chinese."""
    family = family_of(metadata)
    meta: dict[str, Any] = {
        "source": f"gguf:{path}",
        "gguf_architecture": family.arch,
        "file_name": path.name,
        "tensor_types": dict(tensor_types),
    }
    context = metadata.get(f"{family.arch}.context_length")
    if isinstance(context, int):
        meta["context_length"] = context  # the model's own, as its file says
        if family.context_cap is not None and context > family.context_cap:
            meta["context_cap"] = family.context_cap  # n_ctx: the RoPE tables are built this long
    for key, meta_key in (("general.license", "license"), ("general.languages", "language"),
                          ("general.name", "model_name"), ("general.size_label", "size_label")):
        if key in metadata:
            meta[meta_key] = metadata[key]
    return meta
