"""A GGUF file's tensors as the family converters (checkpoints/families/) read them: each checked against the shape
the metadata gives it, every one accounted for; and llama.cpp's row permutation undone.
ggml lists shapes fastest-first ([in, out] for a weight); numpy/torch order is the reverse."""

from __future__ import annotations

import torch

from checkpoints.base import CheckpointError, StateDict
from checkpoints.file_precision import unpermute_rows
from model.config import TransformerConfig
from model.stored_weights import StoredWeight

Shapes = dict[str, tuple[tuple[int, ...], str]]  # tensor name (without blk.N.) -> (shape, which metadata says so)
TENSOR_WHAT = {"attn_q_norm.weight": "a norm on each head's q: read for qwen3 and gemma3 files only",
               "attn_k_norm.weight": "a norm on each head's k: read for qwen3 and gemma3 files only",
               "post_attention_norm.weight": "a norm after attention: read for gemma2 and gemma3 files only",
               "post_ffw_norm.weight": "a norm after the feed-forward layer: read for gemma2 and gemma3 files only"}
ROPE_FREQS = "rope_freqs.weight"  # Llama 3.1+: one RoPE frequency factor per pair (llama.cpp's converter writes it)


def common_shapes(cfg: TransformerConfig) -> Shapes:
    """Each tensor's shape (torch order) as the metadata fixes it, for the names most families share; a family
    record's `shapes` changes what its own tensors hold."""
    d, vocab, mlp, d_head = cfg.d_model, cfg.vocab_size, cfg.mlp_width, cfg.d_head
    q, kv = cfg.n_heads * d_head, cfg.kv_heads * d_head
    width = f"embedding_length {d}"
    heads = f"{width}, head_count {cfg.n_heads}, head_count_kv {cfg.kv_heads}"
    return {
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


class ModelTensors:
    """The file's tensors by GGUF name, each checked against the shape the metadata gives it; remembers which
    were used, so that none is silently ignored."""

    def __init__(self, tensors: StateDict, shapes: Shapes) -> None:
        self.tensors = tensors
        self.used: set[str] = set()
        self.shapes = shapes

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
