"""GGUF files (what llama.cpp, Ollama and LM Studio run) converted into this project's modules.

Read with the `gguf` package (llama.cpp's own reader; no hand-written parser). Every tensor type that
`gguf.quants` can dequantize is turned into float32. The file's `general.architecture` names its family record
(checkpoints/families/, GGUF_FAMILIES): `llama` and `mistral` (attn_q / attn_k rows un-permuted: llama.cpp's
converter permutes them for its interleaved RoPE, this project rotates halves), `qwen2` (Q/K/V biases), `qwen3`
(attn_q_norm / attn_k_norm on each head), `gemma2` / `gemma3` (norms around each sub-layer, local and global layers),
`phi3` (Phi-3, Phi-3.5-mini, Phi-4-mini: fused matrices, partial rotary, longrope), `starcoder2` (LayerNorm, a
plain GELU FFN, biases) and `gpt2`. RoPE scaling: Llama 3.1's `rope_freqs` tensor and `rope.scaling.type = linear`.
Every metadata key that changes the computation and is not implemented is refused, by name
(checkpoints.gguf_metadata); so is every tensor the loader does not use (checkpoints.gguf_tensors).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import torch

from checkpoints.base import CheckpointError, LoadedModel, StateDict, build_model
from checkpoints.families.records import GgufFamily
from checkpoints.file_precision import current_policy, gguf_state
from checkpoints.gguf_layout import check_layout
from checkpoints.gguf_metadata import check_understood, family_of, gguf_config, model_meta, read_metadata
from checkpoints.gguf_tensors import ModelTensors, common_shapes
from checkpoints.gguf_tokenizer import gguf_tokenizer
from model.config import ConfigError, TransformerConfig
from model.stored_weights import stored_nbytes

GGUF_MAGIC = b"GGUF"


def is_gguf(path: Path) -> bool:
    """A file whose first four bytes are GGUF's magic (the name need not end in .gguf: Ollama's blobs don't)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(4) == GGUF_MAGIC
    except OSError:
        return False


def open_reader(path: Path) -> Any:
    """gguf.GGUFReader for path, its failures turned into one readable CheckpointError."""
    import gguf

    if not path.is_file():
        raise CheckpointError(f"{path} is not a file")
    if not is_gguf(path):
        raise CheckpointError(f"{path.name} is not a GGUF file (it does not start with the bytes 'GGUF')")
    check_layout(path)  # every count, length and offset against the file's size, before the reader trusts them
    try:
        return gguf.GGUFReader(str(path), "r")
    except (ValueError, IndexError, KeyError, UnicodeDecodeError, OverflowError) as error:
        # numpy reshape/frombuffer errors: the header promises more bytes than the file holds
        raise CheckpointError(f"{path.name} is not a readable GGUF file (truncated or corrupt?): {error}") from error


def dequantize(tensor: Any) -> torch.Tensor:
    """One tensor of the file as float32, in torch order (ggml's shape reversed)."""
    import gguf

    shape = tuple(int(n) for n in reversed(tensor.shape))
    try:
        values = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
    except NotImplementedError as error:
        raise CheckpointError(
            f"tensor {tensor.name!r} is stored as {tensor.tensor_type.name}, which the gguf package cannot "
            f"dequantize: {error}"
        ) from error
    values = np.asarray(values, dtype=np.float32)
    if values.size != int(np.prod(shape)):
        raise CheckpointError(f"tensor {tensor.name!r}: {values.size} values for the shape {list(shape)}")
    return torch.from_numpy(np.array(values.reshape(shape), dtype=np.float32, copy=True))


def read_tensors(reader: Any) -> StateDict:
    return {tensor.name: dequantize(tensor) for tensor in reader.tensors}


def factor_tensor(reader: Any, name: str) -> tuple[float, ...] | None:
    """A 1-D tensor of RoPE factors (rope_freqs, rope_factors_short, rope_factors_long), if the file has it."""
    for tensor in reader.tensors:
        if tensor.name == name:
            factors = dequantize(tensor)
            if factors.ndim != 1:
                raise CheckpointError(f"tensor {name!r} has shape {list(factors.shape)}: one factor per pair "
                                      "was expected")
            return tuple(float(f) for f in factors)
    return None


def factor_tensors(reader: Any, family: GgufFamily) -> dict[str, tuple[float, ...] | None]:
    """The RoPE factor tensors the family reads before its config (Llama 3.1's rope_freqs, phi3's longrope sets)."""
    return {name: factor_tensor(reader, name) for name in family.factor_tensors}


def read_config(path: Path) -> tuple[Any, dict[str, Any], GgufFamily, TransformerConfig]:
    """The file's reader, metadata, family record and config, every key checked (CheckpointError naming the
    problem otherwise)."""
    reader = open_reader(path)
    metadata = read_metadata(reader, path.name)
    check_understood(metadata)
    family = family_of(metadata)
    tensor_names = {tensor.name for tensor in reader.tensors}
    try:
        cfg = gguf_config(metadata, tied="output.weight" not in tensor_names, factors=factor_tensors(reader, family),
                          tensor_names=frozenset(tensor_names))
    except (ConfigError, TypeError, ValueError) as error:
        raise CheckpointError(f"unsupported {family.arch} configuration in {path.name}: {error}") from error
    return reader, metadata, family, cfg


def inspect_gguf(path: Path, tokenizer: bool = True) -> dict[str, Any]:
    """Check, without dequantizing the whole file, that load_gguf would load it (CheckpointError naming the
    problem otherwise); returns its architecture and parameter count. For registering many files cheaply.
    tokenizer=False: its tokenizer is not built here (a caller about to load the file builds it once, then)."""
    reader, metadata, _, _ = read_config(Path(path))
    if tokenizer:
        gguf_tokenizer(metadata)
    smallest: dict[Any, Any] = {}  # one tensor of each storage type, dequantized to prove the type is readable
    for tensor in reader.tensors:
        if tensor.tensor_type not in smallest or tensor.n_elements < smallest[tensor.tensor_type].n_elements:
            smallest[tensor.tensor_type] = tensor
    for tensor in smallest.values():
        dequantize(tensor)
    return {"architecture": metadata["general.architecture"],
            "parameters": sum(int(tensor.n_elements) for tensor in reader.tensors)}


def load_gguf(path: Path, device: str | torch.device = "cpu") -> LoadedModel:
    """A .gguf file (or an Ollama blob) as this project's decoder, tokenizer and meta."""
    path = Path(path)
    reader, metadata, family, cfg = read_config(path)
    tokenizer, token_meta = gguf_tokenizer(metadata)
    if tokenizer.vocab_size > cfg.vocab_size:
        raise CheckpointError(
            f"the tokenizer has {tokenizer.vocab_size} tokens but the model only {cfg.vocab_size} embedding rows"
        )
    policy = current_policy()  # above its float32 budget, the matrices stay as the file stores them, memory-mapped
    stored = policy.keeps_file_precision(sum(int(tensor.n_elements) for tensor in reader.tensors), device)
    source = ModelTensors(gguf_state(reader, dequantize, policy, stored), family.shapes(cfg, common_shapes(cfg)))
    state = family.convert(cfg, source)
    source.check_all_used()
    model = build_model(cfg, state, device)
    tensor_types = Counter(tensor.tensor_type.name for tensor in reader.tensors)
    meta = {**model_meta(metadata, path, tensor_types), **token_meta}
    if stored:
        meta["weights_in_memory"] = {"kept": "file precision", **stored_nbytes(model)}
    return LoadedModel(model, tokenizer, meta)
