"""Phi-3 / Phi-3.5-mini / Phi-4-mini: the Llama layout with Q, K and V in one matrix and the FFN's gate and up in
one, split at load so that every head and stage is Llama's; RoPE on the first part of each head (partial rotary),
longrope scaling, and a sliding window on every layer when the config sets one.

Hugging Face `phi3` (Phi3ForCausalLM: qkv_proj, gate_up_proj); GGUF `phi3` (attn_qkv or attn_q/k/v, ffn_up of twice
feed_forward_length rows; longrope's factor sets are the tensors rope_factors_short / rope_factors_long).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from checkpoints.base import CheckpointError, ConfigFields, StateDict
from checkpoints.families.llama import LLAMA_FIELDS, LLAMA_KEYS
from checkpoints.families.records import GgufFamily, HfFamily
from checkpoints.gguf_read import GgufRead, shown
from checkpoints.gguf_tensors import ModelTensors, Shapes, outside_blocks
from checkpoints.hf_common import activation, final_norm, layer_norms, loader_name, take
from checkpoints.hf_rope import rope_fields
from model.config import TransformerConfig

# besides Llama's fields: the window, partial rotary, longrope's original context; the dropouts; and the bias and
# mode flags of Phi-4-mini's own code, which transformers does not read, only at the values that leave the
# computation as transformers runs it
HF_FIELDS = LLAMA_FIELDS | ConfigFields(
    frozenset({"sliding_window", "partial_rotary_factor", "original_max_position_embeddings"}),
    frozenset({"resid_pdrop", "embd_pdrop"}),  # dropout: off when a model runs
    {"attention_bias": False, "mlp_bias": False, "lm_head_bias": False, "full_attn_mod": 1,
     "interpolate_factor": 1},
)
# GGUF: partial rotary (rope.dimension_count), a sliding window on every layer (0: none), longrope's attention
# factor and original context
GGUF_KEYS = LLAMA_KEYS | {"rope.dimension_count", "attention.sliding_window", "rope.scaling.attn_factor",
                          "rope.scaling.original_context_length"}
ROPE_SHORT, ROPE_LONG = "rope_factors_short.weight", "rope_factors_long.weight"


def convert_hf(hf_config: dict[str, Any], state: StateDict) -> tuple[TransformerConfig, StateDict]:
    """qkv_proj holds Q rows, then K, then V; gate_up_proj the gate rows, then up."""
    loader = loader_name("phi3")
    d_model, n_heads = hf_config["hidden_size"], hf_config["num_attention_heads"]
    head_dim = hf_config.get("head_dim") or d_model // n_heads
    n_kv = hf_config.get("num_key_value_heads") or n_heads
    n_layers, d_mlp = hf_config["num_hidden_layers"], hf_config["intermediate_size"]
    state = {name.removeprefix("model."): tensor for name, tensor in state.items()}
    tied = bool(hf_config.get("tie_word_embeddings", False)) or "lm_head.weight" not in state
    cfg = TransformerConfig(
        architecture="decoder", vocab_size=hf_config["vocab_size"], d_model=d_model, n_layers=n_layers,
        n_heads=n_heads, n_kv_heads=n_kv, d_mlp=d_mlp, head_dim=None if head_dim * n_heads == d_model else head_dim,
        n_ctx=min(int(hf_config.get("max_position_embeddings", 4096)), 4096), pos_encoding="rope",
        **rope_fields(hf_config, loader, head_dim, phi=True), norm="rmsnorm", norm_placement="pre",
        norm_eps=hf_config.get("rms_norm_eps", 1e-5),
        activation=activation(hf_config, "hidden_act", "silu", gated=True), bias=False, tied_embeddings=tied,
        sliding_window=hf_config.get("sliding_window"),
    )
    out: StateDict = {"stack.embed.W_E.weight": take(state, "embed_tokens.weight")}
    for layer in range(n_layers):
        hf, ours = f"layers.{layer}.", f"stack.blocks.{layer}."
        q, k, v = split_rows(take(state, hf + "self_attn.qkv_proj.weight"), (n_heads * head_dim, n_kv * head_dim,
                                                                              n_kv * head_dim), "qkv_proj")
        out[ours + "attn.W_Q.weight"], out[ours + "attn.W_K.weight"], out[ours + "attn.W_V.weight"] = q, k, v
        out[ours + "attn.W_O.weight"] = take(state, hf + "self_attn.o_proj.weight")
        gate, up = split_rows(take(state, hf + "mlp.gate_up_proj.weight"), (d_mlp, d_mlp), "gate_up_proj")
        out[ours + "mlp.W_gate.weight"], out[ours + "mlp.W_in.weight"] = gate, up
        out[ours + "mlp.W_out.weight"] = take(state, hf + "mlp.down_proj.weight")
        out |= layer_norms(state, hf, ours)
    return cfg, out | final_norm(state, tied)


def split_rows(fused: torch.Tensor, rows: tuple[int, ...], name: str) -> tuple[torch.Tensor, ...]:
    """A fused weight [sum(rows), d_in] cut into its parts, in order (Phi-3's qkv_proj: Q, K, V; gate_up: gate, up)."""
    if fused.ndim != 2 or fused.shape[0] != sum(rows):
        raise CheckpointError(f"weight {name} has shape {list(fused.shape)}: {' + '.join(map(str, rows))} = "
                              f"{sum(rows)} rows were expected")
    return tuple(fused.split(list(rows), dim=0))


def gguf_config(read: GgufRead) -> TransformerConfig:
    common = read.common()
    return TransformerConfig(
        **common, d_mlp=int(read.get("feed_forward_length")), pos_encoding="rope",
        rope_base=float(read.get("rope.freq_base", 10000.0)), **gguf_rope(read, read.head_size),
        norm="rmsnorm", norm_eps=float(read.get("attention.layer_norm_rms_epsilon")), activation="swiglu", bias=False,
        sliding_window=int(read.get("attention.sliding_window", 0)) or None,
    )


def gguf_rope(read: GgufRead, d_head: int) -> dict[str, Any]:
    """A phi3 file's partial rotary and longrope as config fields, read as transformers reads the model's config:
    the short set up to rope.scaling.original_context_length tokens, the long set past it, cos and sin times
    rope.scaling.attn_factor (when the key is missing: √(1 + ln s / ln original), s = context_length / original,
    transformers' default; llama.cpp's converter always writes it)."""
    metadata, key = read.metadata, "phi3.rope.dimension_count"
    dims = int(metadata.get(key, d_head))
    if not 2 <= dims <= d_head or dims % 2:
        raise CheckpointError(f"{key} = {dims}: RoPE must turn an even number of dimensions, at most the head "
                              f"size {d_head}")
    fields: dict[str, Any] = {"rope_dims": dims} if dims != d_head else {}
    attention = metadata.get("phi3.rope.scaling.attn_factor")
    short, long = read.factors.get(ROPE_SHORT), read.factors.get(ROPE_LONG)
    if (short is None) != (long is None):
        raise CheckpointError(f"the file has only one of the tensors {ROPE_SHORT} and {ROPE_LONG}: longrope needs both")
    if short is None or long is None:
        if attention not in (None, 1.0):
            raise CheckpointError(f"phi3.rope.scaling.attn_factor = {shown(attention)} (RoPE attention factor) "
                                  "without the tensors rope_factors_short and rope_factors_long is not implemented")
        return fields
    for name, factors in (("rope_factors_short", short), ("rope_factors_long", long)):
        if len(factors) != dims // 2:
            raise CheckpointError(f"tensor {name}.weight has {len(factors)} factors, but {key} = {dims} turned "
                                  f"dimensions make {dims // 2} pairs")
    context = int(metadata["phi3.context_length"])
    original = int(metadata.get("phi3.rope.scaling.original_context_length", context))
    if original < 1:
        raise CheckpointError(f"phi3.rope.scaling.original_context_length = {original} must be at least 1")
    if attention is None:
        scale = context / original
        attention = 1.0 if scale <= 1.0 else math.sqrt(1 + math.log(scale) / math.log(original))
    if not (isinstance(attention, (int, float)) and math.isfinite(attention) and attention > 0):
        raise CheckpointError(f"phi3.rope.scaling.attn_factor = {shown(attention)} must be a number above 0")
    return {**fields, "rope_freq_factors": short, "rope_long_freq_factors": long, "rope_original_context": original,
            "rope_attention_factor": float(attention)}


def gguf_shapes(cfg: TransformerConfig, shapes: Shapes) -> Shapes:
    """Fused Q, K, V rows; fused gate then up rows; longrope's sets, one factor per turned pair."""
    q, kv, d, mlp = cfg.n_heads * cfg.d_head, cfg.kv_heads * cfg.d_head, cfg.d_model, cfg.mlp_width
    heads = f"embedding_length {d}, head_count {cfg.n_heads}, head_count_kv {cfg.kv_heads}"
    pairs = ((cfg.rotary_dims // 2,), "rope.dimension_count")
    return shapes | {"attn_qkv.weight": ((q + 2 * kv, d), heads),
                     "ffn_up.weight": ((2 * mlp, d), f"embedding_length {d}, feed_forward_length {mlp} (gate and up)"),
                     ROPE_SHORT: pairs, ROPE_LONG: pairs}


def convert_gguf(cfg: TransformerConfig, source: ModelTensors) -> StateDict:
    """attn_qkv holds Q, K and V rows (or the file has attn_q, attn_k, attn_v), ffn_up the gate rows then the up
    rows (llama.cpp's SwiGLU on one matrix); split here, unpermuted (llama.cpp turns phi3 as NEOX, rotate-half)."""
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


HF = HfFamily("phi3", HF_FIELDS, convert_hf)
# tokenizer.ggml.pre of Phi-4-mini's vocabulary (GPT-4o's o200k split); Phi-3's is SentencePiece (no pre-split)
GGUF = GgufFamily("phi3", GGUF_KEYS, gguf_config, convert_gguf, gguf_shapes, pre_splits={"gpt-4o": "gpt4o"},
                  factor_tensors=(ROPE_SHORT, ROPE_LONG))
