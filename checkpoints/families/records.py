"""The two kinds of family record: everything the GGUF loader and the Hugging Face loader know about one model
family, in one place (a module of checkpoints/families/ each)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from checkpoints.base import ConfigFields, StateDict
from checkpoints.gguf_read import LONGEST_CONTEXT, GgufRead
from checkpoints.gguf_tensors import ROPE_FREQS, ModelTensors, Shapes
from model.config import TransformerConfig


def common_shapes_only(cfg: TransformerConfig, shapes: Shapes) -> Shapes:
    return shapes


@dataclass(frozen=True)
class GgufFamily:
    """One GGUF `general.architecture`.

    keys:      the metadata keys under `<arch>.` that set a config field (checkpoints/gguf_metadata.py checks every
               other key: neutral values pass, the rest are refused by name);
    config:    the TransformerConfig those keys build (GgufRead: the metadata, the fields every decoder shares);
    convert:   the file's tensor names -> the project's weight names (each tensor shape-checked as it is read);
    shapes:    the expected shapes, given the common ones (checkpoints/gguf_tensors.py), for the tensors the
               family stores differently (fused matrices, learned positions);
    pre_splits: `tokenizer.ggml.pre` -> the pre-split (checkpoints/gguf_tokenizer.py SPLITS) of the family's own
               vocabularies, as llama.cpp maps them;
    factor_tensors: the 1-D RoPE factor tensors read before the config (GgufRead.factors);
    rope_scaling: whether `rope.scaling.type = linear` is read (learned positions have nothing to scale);
    context_cap: the longest context whose RoPE tables are built (None: the file's own, learned positions).
    """

    arch: str
    keys: frozenset[str]
    config: Callable[[GgufRead], TransformerConfig]
    convert: Callable[[TransformerConfig, ModelTensors], StateDict]
    shapes: Callable[[TransformerConfig, Shapes], Shapes] = common_shapes_only
    pre_splits: Mapping[str, str] = field(default_factory=dict)
    factor_tensors: tuple[str, ...] = (ROPE_FREQS,)
    rope_scaling: bool = True
    context_cap: int | None = LONGEST_CONTEXT


@dataclass(frozen=True)
class HfFamily:
    """One Hugging Face `model_type`.

    fields:  every config field the converter understands (read, inert, or accepted at one default value;
             checkpoints.base.refuse_unimplemented refuses any other by name);
    convert: (config.json, state dict) -> (the TransformerConfig it builds, the project's weights). The expected
             shapes are the model's own: checkpoints.base.build_model checks every weight against the config.
    tokenizer: what the directory's tokenizer.json holds ("bpe" or "wordpiece"); its pre-split is the file's own
             (checkpoints/hf_tokenizer.py).
    """

    model_type: str
    fields: ConfigFields
    convert: Callable[[dict[str, Any], StateDict], tuple[TransformerConfig, StateDict]]
    tokenizer: str = "bpe"
