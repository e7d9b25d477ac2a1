"""Llama, and the Llama layout that Mistral, Qwen2 and Qwen3 share: RoPE on split halves (linear or llama3
scaling), RMSNorm before each sub-layer, a gated FFN (SwiGLU), grouped K/V heads.

    h = x + W_O · attn(RoPE(W_Q · norm(x)), RoPE(W_K · norm(x)), W_V · norm(x))
    out = h + W_out · (silu(W_gate · norm(h)) ⊙ W_in · norm(h))

A family of this layout is a `LlamaLayout`: what it adds (biases, a norm on each head's q and k, sliding windows).
Hugging Face `llama` (LlamaForCausalLM); GGUF `llama`, whose attn_q / attn_k rows llama.cpp's converter permutes
for its interleaved RoPE (un-permuted here: this project rotates halves).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from checkpoints.base import ConfigFields, StateDict
from checkpoints.experts import gguf_experts, hf_experts
from checkpoints.families.records import GgufFamily, HfFamily
from checkpoints.gguf_read import GgufRead
from checkpoints.gguf_tensors import ROPE_FREQS, ModelTensors, outside_blocks, unpermute
from checkpoints.hf_common import (
    ATTENTION_PROJECTIONS,
    GENERIC_FIELDS,
    activation,
    final_norm,
    layer_norms,
    loader_name,
    projections,
    strip_prefix,
    take,
)
from checkpoints.hf_rope import rope_settings
from model.config import TransformerConfig

Windows = Callable[[dict[str, Any], str, int], tuple[int | None, tuple[int, ...] | None]]
HfExtra = Callable[[dict[str, Any], str, int], dict[str, Any]]  # (config.json, loader, layers) -> config fields
GgufExtra = Callable[[GgufRead], dict[str, Any]]


def no_windows(hf_config: dict[str, Any], loader: str, n_layers: int) -> tuple[None, None]:
    return None, None


def no_extra(hf_config: dict[str, Any], loader: str, n_layers: int) -> dict[str, Any]:
    return {}


def no_gguf_extra(read: GgufRead) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class LlamaLayout:
    """What a family of the Llama layout adds to it."""

    qkv_bias: bool = False        # Q, K and V always carry a bias (Qwen2)
    attention_bias: bool = False  # the config field attention_bias biases Q, K, V and O (Llama, Qwen3)
    mlp_bias: bool = False        # the config field mlp_bias biases the FFN's three matrices (Llama)
    qk_norm: bool = False         # an RMSNorm on each head's q and k before RoPE (Qwen3)
    windows: Windows = no_windows  # (sliding window, the layers it applies to or None for all) from the config
    permuted: bool = False        # GGUF: llama.cpp's converter permuted the attn_q / attn_k rows
    # config fields the family sets beyond the layout's: SmolLM3's NoPE layers, Qwen3-MoE's experts (whose layers'
    # weights checkpoints/experts.py reads)
    hf_extra: HfExtra = no_extra
    gguf_extra: GgufExtra = no_gguf_extra


# the config fields every family of the layout reads
LLAMA_FIELDS = GENERIC_FIELDS | ConfigFields(
    read=frozenset({
        "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
        "num_key_value_heads", "head_dim", "hidden_act", "max_position_embeddings", "rms_norm_eps",
        "rope_parameters", "rope_theta", "rope_scaling",
    }),
    # pretraining_tp: the same matmuls in slices; is_llama_config: a flag nanotron writes (SmolLM2)
    inert=frozenset({"attention_dropout", "pretraining_tp", "is_llama_config"}),
    defaults={"rope_interleaved": False},  # nanotron's pair order; transformers' layout splits halves
)
# the GGUF keys (after "<arch>.") every family of the layout reads
LLAMA_KEYS = frozenset({
    "vocab_size", "context_length", "embedding_length", "block_count", "feed_forward_length",
    "attention.head_count", "attention.head_count_kv", "attention.layer_norm_rms_epsilon", "rope.freq_base",
})


def convert_hf(layout: LlamaLayout, hf_config: dict[str, Any], state: StateDict) -> tuple[TransformerConfig, StateDict]:
    """A Hugging Face directory of the layout: its config and weights (biases as the layout says)."""
    loader = loader_name(str(hf_config.get("model_type")))
    state = strip_prefix(state, ("model.",))
    d_model, n_heads = hf_config["hidden_size"], hf_config["num_attention_heads"]
    head_dim = hf_config.get("head_dim") or d_model // n_heads
    attention_bias = layout.attention_bias and bool(hf_config.get("attention_bias", False))
    qkv_bias = attention_bias or layout.qkv_bias
    mlp_bias = layout.mlp_bias and bool(hf_config.get("mlp_bias", False))
    tied = bool(hf_config.get("tie_word_embeddings", False)) or "lm_head.weight" not in state
    n_layers = hf_config["num_hidden_layers"]
    window, window_layers = layout.windows(hf_config, loader, n_layers)
    rope_base, rope_freq_factors = rope_settings(hf_config, loader, head_dim)
    cfg = TransformerConfig(
        architecture="decoder",
        vocab_size=hf_config["vocab_size"],
        d_model=d_model,
        n_layers=n_layers,
        n_heads=n_heads,
        n_kv_heads=hf_config.get("num_key_value_heads") or n_heads,
        head_dim=None if head_dim * n_heads == d_model else head_dim,  # Qwen3-0.6B: 16 heads of 128, d_model 1024
        d_mlp=hf_config["intermediate_size"],
        n_ctx=min(int(hf_config.get("max_position_embeddings", 2048)), 4096),
        pos_encoding="rope",
        rope_base=rope_base,
        rope_freq_factors=rope_freq_factors,
        norm="rmsnorm",
        norm_placement="pre",
        norm_eps=hf_config.get("rms_norm_eps", 1e-6),
        qk_norm=layout.qk_norm,
        activation=activation(hf_config, "hidden_act", "silu", gated=True),
        bias=False,
        qkv_bias=qkv_bias,
        attn_out_bias=attention_bias,
        mlp_bias=mlp_bias,
        tied_embeddings=tied,
        sliding_window=window,
        window_layers=window_layers,
        **layout.hf_extra(hf_config, loader, n_layers),
    )
    out: StateDict = {"stack.embed.W_E.weight": take(state, "embed_tokens.weight")}
    biases = frozenset(ATTENTION_PROJECTIONS if attention_bias else ("q_proj", "k_proj", "v_proj") if qkv_bias else ())
    for layer in range(n_layers):
        hf, ours = f"layers.{layer}.", f"stack.blocks.{layer}."
        out |= projections(state, hf, ours, biases, mlp_bias, mlp=not cfg.is_moe(layer))
        if cfg.is_moe(layer):
            out |= hf_experts(state, hf, ours, cfg)
        if layout.qk_norm:
            out[ours + "attn.q_norm_w"] = take(state, hf + "self_attn.q_norm.weight")
            out[ours + "attn.k_norm_w"] = take(state, hf + "self_attn.k_norm.weight")
        out |= layer_norms(state, hf, ours)
    return cfg, out | final_norm(state, tied)


def gguf_config(layout: LlamaLayout, read: GgufRead) -> TransformerConfig:
    """A GGUF file of the layout: RoPE (with Llama 3.1's rope_freqs or linear scaling), RMSNorm, SwiGLU."""
    common = read.common()
    return TransformerConfig(
        **common, d_mlp=int(read.get("feed_forward_length")), pos_encoding="rope",
        rope_base=float(read.get("rope.freq_base", 10000.0)),
        rope_freq_factors=read.rope_factors(read.head_size, ROPE_FREQS), norm="rmsnorm",
        norm_eps=float(read.get("attention.layer_norm_rms_epsilon")), activation="swiglu", bias=False,
        qkv_bias=True if layout.qkv_bias else None, qk_norm=layout.qk_norm, **layout.gguf_extra(read),
    )


def convert_gguf(layout: LlamaLayout, cfg: TransformerConfig, source: ModelTensors) -> StateDict:
    """GGUF tensor names -> ours; Q/K rows un-permuted when the layout says llama.cpp permuted them."""
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
                if layout.permuted and heads:
                    tensor = unpermute(tensor, heads)
                out[f"{ours}attn.{our_name}.{kind}"] = tensor
        if cfg.is_moe(layer):
            out |= gguf_experts(source, blk, ours, cfg)
        else:
            out[ours + "mlp.W_gate.weight"] = source.get(blk + "ffn_gate.weight")
            out[ours + "mlp.W_in.weight"] = source.get(blk + "ffn_up.weight")
            out[ours + "mlp.W_out.weight"] = source.get(blk + "ffn_down.weight")
        if cfg.qk_norm:
            out[ours + "attn.q_norm_w"] = source.get(blk + "attn_q_norm.weight")
            out[ours + "attn.k_norm_w"] = source.get(blk + "attn_k_norm.weight")
        out[ours + "ln1.w"] = source.get(blk + "attn_norm.weight")
        out[ours + "ln2.w"] = source.get(blk + "ffn_norm.weight")
    return out | outside_blocks(cfg, source, (ROPE_FREQS,))


def records(name: str, layout: LlamaLayout, hf_fields: ConfigFields,
            pre_splits: dict[str, str]) -> tuple[HfFamily, GgufFamily]:
    """A family of the Llama layout: its Hugging Face record and its GGUF record (both named `name`)."""
    return (HfFamily(name, LLAMA_FIELDS | hf_fields, partial(convert_hf, layout)),
            GgufFamily(name, LLAMA_KEYS, partial(gguf_config, layout), partial(convert_gguf, layout),
                       pre_splits=pre_splits))


LAYOUT = LlamaLayout(attention_bias=True, mlp_bias=True, permuted=True)
# tokenizer.ggml.pre of Llama 3's vocabulary and of Llama-architecture models with their own (SmolLM, Falcon 3, Smaug)
HF, GGUF = records("llama", LAYOUT, ConfigFields(frozenset({"attention_bias", "mlp_bias"}), frozenset(), {}), {
    "llama3": "llama3", "llama-v3": "llama3", "llama-bpe": "llama3", "falcon3": "llama3",
    "smollm": "digits_gpt2", "smaug-bpe": "llama3_regex"})
