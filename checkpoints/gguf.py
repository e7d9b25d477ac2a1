"""GGUF files (what llama.cpp, Ollama and LM Studio run) converted into this project's modules.

Read with the `gguf` package (llama.cpp's own reader; no hand-written parser). Every tensor type that
`gguf.quants` can dequantize is turned into float32. Architectures: `llama`, `mistral` (attn_q / attn_k rows
un-permuted: llama.cpp's converter permutes them for its interleaved RoPE, this project rotates halves),
`qwen2` (stored unpermuted, Q/K/V biases), `qwen3` (unpermuted, attn_q_norm / attn_k_norm on each head) and
`gpt2`. RoPE scaling: Llama 3.1's `rope_freqs` tensor and `rope.scaling.type = linear`. Every metadata key that
changes the computation and is not implemented is refused, by name (checkpoints.gguf_metadata); so is every tensor
the loader does not use.
ggml lists shapes fastest-first ([in, out] for a weight); numpy/torch order is the reverse.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import torch

from checkpoints.base import CheckpointError, LoadedModel, StateDict, build_model
from checkpoints.file_precision import current_policy, gguf_state, unpermute_rows
from checkpoints.gguf_layout import check_layout
from checkpoints.gguf_metadata import (
    GEMMA_ARCHITECTURES,
    PERMUTED_ARCHITECTURES,
    check_understood,
    gguf_config,
    model_meta,
    read_metadata,
)
from checkpoints.gguf_tokenizer import gguf_tokenizer
from model.config import ConfigError, TransformerConfig
from model.stored_weights import StoredWeight, stored_nbytes

GGUF_MAGIC = b"GGUF"
TENSOR_WHAT = {"attn_q_norm.weight": "a norm on each head's q: read for qwen3 and gemma3 files only",
               "attn_k_norm.weight": "a norm on each head's k: read for qwen3 and gemma3 files only",
               "post_attention_norm.weight": "a norm after attention: read for gemma2 and gemma3 files only",
               "post_ffw_norm.weight": "a norm after the feed-forward layer: read for gemma2 and gemma3 files only"}
ROPE_FREQS = "rope_freqs.weight"  # Llama 3.1+: one RoPE frequency factor per pair (llama.cpp's converter writes it)
# phi3 longrope: the factor sets for sequences up to / past the original context (llama.cpp's converter writes both)
ROPE_SHORT, ROPE_LONG = "rope_factors_short.weight", "rope_factors_long.weight"


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


def unpermute(weight: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Undo llama.cpp's `permute` (convert_hf_to_gguf.py) on attn_q / attn_k rows.

    The converter turns each head's rows [first half | second half] (rotate-half RoPE) into interleaved
    pairs (x0, x_{d/2}, x1, x_{d/2+1}, ...): reshape(head, 2, d_head/2, ...).swapaxes(1, 2). This is its inverse.
    weight: [head * d_head, d_model] (or a bias [head * d_head]).
    """
    if isinstance(weight, StoredWeight):  # kept in the file's precision: permute its row order instead
        return unpermute_rows(weight, unpermute, n_heads)
    rows = weight.shape[0]
    if rows % (2 * n_heads) != 0:
        raise CheckpointError(f"{rows} rows cannot be {n_heads} RoPE heads of even size")
    rest = tuple(weight.shape[1:])
    return weight.reshape(n_heads, rows // n_heads // 2, 2, *rest).swapaxes(1, 2).reshape(weight.shape)


def expected_shapes(cfg: TransformerConfig, arch: str) -> dict[str, tuple[tuple[int, ...], str]]:
    """Each tensor's shape (torch order) as the metadata fixes it, and which metadata says so."""
    d, vocab, mlp, d_head = cfg.d_model, cfg.vocab_size, cfg.mlp_width, cfg.d_head
    q, kv = cfg.n_heads * d_head, cfg.kv_heads * d_head
    width = f"embedding_length {d}"
    heads = f"{width}, head_count {cfg.n_heads}, head_count_kv {cfg.kv_heads}"
    shapes = {
        "token_embd.weight": ((vocab, d), f"vocab_size {vocab}, {width}"),
        "output.weight": ((vocab, d), f"vocab_size {vocab}, {width}"),
        "output_norm.weight": ((d,), width), "output_norm.bias": ((d,), width),
        "attn_norm.weight": ((d,), width), "attn_norm.bias": ((d,), width),
        "post_attention_norm.weight": ((d,), width), "post_ffw_norm.weight": ((d,), width),
        "ffn_norm.weight": ((d,), width), "ffn_norm.bias": ((d,), width),
        "attn_q.weight": ((q, d), heads), "attn_q.bias": ((q,), heads),
        "attn_k.weight": ((kv, d), heads), "attn_k.bias": ((kv,), heads),
        "attn_v.weight": ((kv, d), heads), "attn_v.bias": ((kv,), heads),
        "attn_output.weight": ((d, q), heads), "attn_output.bias": ((d,), width),
        "attn_qkv.weight": ((3 * d, d), width), "attn_qkv.bias": ((3 * d,), width),
        "ffn_gate.weight": ((mlp, d), f"{width}, feed_forward_length {mlp}"),
        "ffn_up.weight": ((mlp, d), f"{width}, feed_forward_length {mlp}"),
        "ffn_up.bias": ((mlp,), f"feed_forward_length {mlp}"),
        "ffn_down.weight": ((d, mlp), f"{width}, feed_forward_length {mlp}"),
        "ffn_down.bias": ((d,), width),
        "attn_q_norm.weight": ((d_head,), heads), "attn_k_norm.weight": ((d_head,), heads),
        ROPE_FREQS: ((d_head // 2,), heads),
    }
    if arch == "phi3":  # fused Q, K, V rows; fused gate then up rows; longrope's sets, one factor per turned pair
        shapes["attn_qkv.weight"] = ((q + 2 * kv, d), heads)
        shapes["ffn_up.weight"] = ((2 * mlp, d), f"{width}, feed_forward_length {mlp} (gate and up)")
        shapes[ROPE_SHORT] = shapes[ROPE_LONG] = ((cfg.rotary_dims // 2,), "rope.dimension_count")
    if arch == "gpt2":
        shapes["position_embd.weight"] = ((cfg.n_ctx, d), f"context_length {cfg.n_ctx}, {width}")
    return shapes


class ModelTensors:
    """The file's tensors by GGUF name, each checked against the shape the metadata gives it; remembers which
    were used, so that none is silently ignored."""

    def __init__(self, tensors: StateDict, cfg: TransformerConfig, arch: str) -> None:
        self.tensors = tensors
        self.used: set[str] = set()
        self.shapes = expected_shapes(cfg, arch)

    def has(self, name: str) -> bool:
        return name in self.tensors

    def get(self, name: str) -> torch.Tensor:
        if name not in self.tensors:
            raise CheckpointError(f"the file has no tensor {name!r}")
        tensor = self.tensors[name]
        shape, why = self.shapes[name.split(".", 2)[2] if name.startswith("blk.") else name]
        if tuple(tensor.shape) != shape:
            raise CheckpointError(
                f"tensor {name!r} has shape {list(tensor.shape)}, but the metadata ({why}) says {list(shape)}"
            )
        self.used.add(name)
        return tensor

    def check_all_used(self) -> None:
        unused = sorted(set(self.tensors) - self.used)
        if unused:
            local = {name: name.split(".", 2)[2] if name.startswith("blk.") else name for name in unused}
            what = {name: TENSOR_WHAT.get(local[name]) for name in unused}
            shown = ", ".join(f"{name} ({what[name]})" if what[name] else name for name in unused[:5])
            shown += " ..." if len(unused) > 5 else ""
            raise CheckpointError(
                f"the file has tensors this loader does not implement (refused rather than ignored): {shown}"
            )


def outside_blocks(cfg: TransformerConfig, source: ModelTensors, factors: tuple[str, ...]) -> StateDict:
    """The final norm and the unembedding (none when tied). `factors`: RoPE factor tensors the config already read
    (rope_freq_factors, longrope's sets), taken here too so check_all_used knows them, like every tensor."""
    out: StateDict = {"stack.ln_final.w": source.get("output_norm.weight")}
    if not cfg.tied_embeddings:
        out["W_U.weight"] = source.get("output.weight")
    for name in factors:
        if source.has(name):
            source.get(name)
    return out


def convert_llama(arch: str, cfg: TransformerConfig, source: ModelTensors) -> StateDict:
    """llama / mistral / qwen2 tensor names -> ours; llama and mistral Q/K rows un-permuted."""
    permuted = arch in PERMUTED_ARCHITECTURES
    out: StateDict = {"stack.embed.W_E.weight": source.get("token_embd.weight")}
    for layer in range(cfg.n_layers):
        blk, ours = f"blk.{layer}.", f"stack.blocks.{layer}."
        for gguf_name, our_name, heads in (("attn_q", "W_Q", cfg.n_heads), ("attn_k", "W_K", cfg.kv_heads),
                                           ("attn_v", "W_V", 0), ("attn_output", "W_O", 0)):
            for kind in ("weight", "bias"):
                name = f"{blk}{gguf_name}.{kind}"
                if kind == "bias" and not source.has(name):
                    continue
                tensor = source.get(name)
                if permuted and heads:
                    tensor = unpermute(tensor, heads)
                out[f"{ours}attn.{our_name}.{kind}"] = tensor
        out[ours + "mlp.W_gate.weight"] = source.get(blk + "ffn_gate.weight")
        out[ours + "mlp.W_in.weight"] = source.get(blk + "ffn_up.weight")
        out[ours + "mlp.W_out.weight"] = source.get(blk + "ffn_down.weight")
        if cfg.qk_norm:
            out[ours + "attn.q_norm_w"] = source.get(blk + "attn_q_norm.weight")
            out[ours + "attn.k_norm_w"] = source.get(blk + "attn_k_norm.weight")
        out[ours + "ln1.w"] = source.get(blk + "attn_norm.weight")
        out[ours + "ln2.w"] = source.get(blk + "ffn_norm.weight")
    return out | outside_blocks(cfg, source, (ROPE_FREQS,))


def convert_gemma(cfg: TransformerConfig, source: ModelTensors) -> StateDict:
    """gemma2 / gemma3 tensor names -> ours (Q/K rows stored unpermuted). llama.cpp's converter stores every norm's
    gain as 1 + w (Gemma's RMSNorm multiplies by 1 + w): that gain is what our norms hold, so it is read as is."""
    out: StateDict = {"stack.embed.W_E.weight": source.get("token_embd.weight")}
    names = {"attn_q": "attn.W_Q", "attn_k": "attn.W_K", "attn_v": "attn.W_V", "attn_output": "attn.W_O",
             "ffn_gate": "mlp.W_gate", "ffn_up": "mlp.W_in", "ffn_down": "mlp.W_out"}
    norms = {"attn_norm": "ln1.w", "post_attention_norm": "ln1_post.w", "ffn_norm": "ln2.w",
             "post_ffw_norm": "ln2_post.w"}
    if cfg.qk_norm:
        norms.update({"attn_q_norm": "attn.q_norm_w", "attn_k_norm": "attn.k_norm_w"})
    for layer in range(cfg.n_layers):
        blk, ours = f"blk.{layer}.", f"stack.blocks.{layer}."
        for gguf_name, our_name in names.items():
            out[f"{ours}{our_name}.weight"] = source.get(f"{blk}{gguf_name}.weight")
        for gguf_name, our_name in norms.items():
            out[ours + our_name] = source.get(f"{blk}{gguf_name}.weight")
    return out | outside_blocks(cfg, source, (ROPE_FREQS,))


def convert_phi3(cfg: TransformerConfig, source: ModelTensors) -> StateDict:
    """phi3: attn_qkv holds Q, K and V rows (or the file has attn_q, attn_k, attn_v), ffn_up holds the gate rows
    then the up rows (llama.cpp's SwiGLU on one matrix); split here, unpermuted (llama.cpp turns phi3 as NEOX,
    rotate-half, like this project)."""
    out: StateDict = {"stack.embed.W_E.weight": source.get("token_embd.weight")}
    q, kv, mlp = cfg.n_heads * cfg.d_head, cfg.kv_heads * cfg.d_head, cfg.mlp_width
    for layer in range(cfg.n_layers):
        blk, ours = f"blk.{layer}.", f"stack.blocks.{layer}."
        if source.has(blk + "attn_qkv.weight"):
            parts = source.get(blk + "attn_qkv.weight").split([q, kv, kv], dim=0)
        else:
            parts = tuple(source.get(f"{blk}attn_{name}.weight") for name in ("q", "k", "v"))
        for our_name, tensor in zip(("W_Q", "W_K", "W_V"), parts, strict=True):
            out[f"{ours}attn.{our_name}.weight"] = tensor
        out[ours + "attn.W_O.weight"] = source.get(blk + "attn_output.weight")
        out[ours + "mlp.W_gate.weight"], out[ours + "mlp.W_in.weight"] = source.get(blk + "ffn_up.weight").split(
            [mlp, mlp], dim=0)
        out[ours + "mlp.W_out.weight"] = source.get(blk + "ffn_down.weight")
        out[ours + "ln1.w"] = source.get(blk + "attn_norm.weight")
        out[ours + "ln2.w"] = source.get(blk + "ffn_norm.weight")
    return out | outside_blocks(cfg, source, (ROPE_SHORT, ROPE_LONG))


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


def longrope_sets(reader: Any, arch: str) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """A phi3 file's (short, long) longrope factor sets; None without them. One without the other is refused."""
    if arch != "phi3":
        return None
    short, long = factor_tensor(reader, ROPE_SHORT), factor_tensor(reader, ROPE_LONG)
    if (short is None) != (long is None):
        raise CheckpointError(f"the file has only one of the tensors {ROPE_SHORT} and {ROPE_LONG}: longrope needs both")
    return None if short is None or long is None else (short, long)


def rope_freqs(reader: Any) -> tuple[float, ...] | None:
    """The file's rope_freqs tensor (Llama 3.1+ RoPE scaling: one frequency factor per pair), if it has one."""
    return factor_tensor(reader, ROPE_FREQS)


def convert_gpt2(cfg: TransformerConfig, source: ModelTensors) -> StateDict:
    """gpt2: llama.cpp stores the fused attn_qkv as a Linear [3 * d_model, d_model] (Conv1D transposed)."""
    out: StateDict = {
        "stack.embed.W_E.weight": source.get("token_embd.weight"),
        "stack.embed.W_pos.weight": source.get("position_embd.weight"),
    }
    for layer in range(cfg.n_layers):
        blk, ours = f"blk.{layer}.", f"stack.blocks.{layer}."
        w_qkv, b_qkv = source.get(blk + "attn_qkv.weight"), source.get(blk + "attn_qkv.bias")
        for part, w, b in zip(("W_Q", "W_K", "W_V"), w_qkv.chunk(3, 0), b_qkv.chunk(3, 0), strict=True):
            out[ours + f"attn.{part}.weight"], out[ours + f"attn.{part}.bias"] = w, b
        for gguf_name, our_name in (("attn_output", "attn.W_O"), ("ffn_up", "mlp.W_in"), ("ffn_down", "mlp.W_out")):
            out[f"{ours}{our_name}.weight"] = source.get(f"{blk}{gguf_name}.weight")
            out[f"{ours}{our_name}.bias"] = source.get(f"{blk}{gguf_name}.bias")
        for gguf_name, our_name in (("attn_norm", "ln1"), ("ffn_norm", "ln2")):
            out[f"{ours}{our_name}.w"] = source.get(f"{blk}{gguf_name}.weight")
            out[f"{ours}{our_name}.b"] = source.get(f"{blk}{gguf_name}.bias")
    out["stack.ln_final.w"] = source.get("output_norm.weight")
    out["stack.ln_final.b"] = source.get("output_norm.bias")
    if not cfg.tied_embeddings:
        out["W_U.weight"] = source.get("output.weight")
    return out


def inspect_gguf(path: Path, tokenizer: bool = True) -> dict[str, Any]:
    """Check, without dequantizing the whole file, that load_gguf would load it (CheckpointError naming the
    problem otherwise); returns its architecture and parameter count. For registering many files cheaply.
    tokenizer=False: its tokenizer is not built here (a caller about to load the file builds it once, then)."""
    path = Path(path)
    reader = open_reader(path)
    metadata = read_metadata(reader, path.name)
    check_understood(metadata)
    tensor_names = {tensor.name for tensor in reader.tensors}
    try:
        gguf_config(metadata, tied="output.weight" not in tensor_names, rope_freqs=rope_freqs(reader),
                    longrope=longrope_sets(reader, str(metadata["general.architecture"])))
    except (ConfigError, TypeError, ValueError) as error:
        raise CheckpointError(f"unsupported configuration in {path.name}: {error}") from error
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
    reader = open_reader(path)
    metadata = read_metadata(reader, path.name)
    check_understood(metadata)
    arch = str(metadata["general.architecture"])
    tensor_names = {tensor.name for tensor in reader.tensors}
    try:
        cfg = gguf_config(metadata, tied="output.weight" not in tensor_names, rope_freqs=rope_freqs(reader),
                          longrope=longrope_sets(reader, arch))
    except (ConfigError, TypeError, ValueError) as error:
        raise CheckpointError(f"unsupported {arch} configuration in {path.name}: {error}") from error
    tokenizer, token_meta = gguf_tokenizer(metadata)
    if tokenizer.vocab_size > cfg.vocab_size:
        raise CheckpointError(
            f"the tokenizer has {tokenizer.vocab_size} tokens but the model only {cfg.vocab_size} embedding rows"
        )
    policy = current_policy()  # above its float32 budget, the matrices stay as the file stores them, memory-mapped
    stored = policy.keeps_file_precision(sum(int(tensor.n_elements) for tensor in reader.tensors), device)
    source = ModelTensors(gguf_state(reader, dequantize, policy, stored), cfg, arch)
    if arch == "gpt2":
        state = convert_gpt2(cfg, source)
    elif arch in GEMMA_ARCHITECTURES:
        state = convert_gemma(cfg, source)
    elif arch == "phi3":
        state = convert_phi3(cfg, source)
    else:
        state = convert_llama(arch, cfg, source)
    source.check_all_used()
    model = build_model(cfg, state, device)
    tensor_types = Counter(tensor.tensor_type.name for tensor in reader.tensors)
    meta = {**model_meta(metadata, path, tensor_types), **token_meta}
    if stored:
        meta["weights_in_memory"] = {"kept": "file precision", **stored_nbytes(model)}
    return LoadedModel(model, tokenizer, meta)
