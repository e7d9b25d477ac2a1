"""Phi-3 / Phi-3.5-mini / Phi-4-mini Hugging Face checkpoints (transformers' Phi3ForCausalLM) for checkpoints/hf.py.

Llama's layout with two fused matrices, split at load so that every head and stage is Llama's; partial rotary
and longrope come from checkpoints/hf_rope.py.
"""

from __future__ import annotations

from typing import Any

import torch

from checkpoints.base import CheckpointError, ConfigFields, StateDict
from checkpoints.hf_common import activation, take
from checkpoints.hf_rope import rope_fields
from model.config import TransformerConfig

# besides Llama's fields (checkpoints/hf.py): the window, partial rotary, longrope's original context; the
# dropouts; and the bias and mode flags of Phi-4-mini's own code, which transformers does not read, only at the
# values that leave the computation as transformers runs it
PHI3_FIELDS = ConfigFields(
    frozenset({"sliding_window", "partial_rotary_factor", "original_max_position_embeddings"}),
    frozenset({"resid_pdrop", "embd_pdrop"}),  # dropout: off when a model runs
    {"attention_bias": False, "mlp_bias": False, "lm_head_bias": False, "full_attn_mod": 1,
     "interpolate_factor": 1},
)


def convert_phi3(
    hf_config: dict[str, Any], state: StateDict) -> tuple[TransformerConfig, StateDict]:
    """Phi-3 / Phi-4-mini: Llama's layout with Q, K and V in one matrix (qkv_proj: Q rows, then K, then V) and the
    FFN's gate and up in one (gate_up_proj: gate rows, then up), split here so that every head and stage is
    the same as Llama's; RoPE on the first partial_rotary_factor of each head, longrope scaling, and
    transformers' sliding window (`sliding_window`, every layer) when the config sets one."""
    loader = "the Hugging Face phi3 loader"
    d_model, n_heads = hf_config["hidden_size"], hf_config["num_attention_heads"]
    head_dim = hf_config.get("head_dim") or d_model // n_heads
    n_kv = hf_config.get("num_key_value_heads") or n_heads
    n_layers, d_mlp = hf_config["num_hidden_layers"], hf_config["intermediate_size"]
    state = {name.removeprefix("model."): tensor for name, tensor in state.items()}
    tied = bool(hf_config.get("tie_word_embeddings", False)) or "lm_head.weight" not in state
    window = hf_config.get("sliding_window")
    cfg = TransformerConfig(
        architecture="decoder", vocab_size=hf_config["vocab_size"], d_model=d_model, n_layers=n_layers,
        n_heads=n_heads, n_kv_heads=n_kv, d_mlp=d_mlp, head_dim=None if head_dim * n_heads == d_model else head_dim,
        n_ctx=min(int(hf_config.get("max_position_embeddings", 4096)), 4096), pos_encoding="rope",
        **rope_fields(hf_config, loader, head_dim), norm="rmsnorm", norm_placement="pre",
        norm_eps=hf_config.get("rms_norm_eps", 1e-5),
        activation=activation(hf_config, "hidden_act", "silu", gated=True), bias=False, tied_embeddings=tied,
        sliding_window=window,
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
        out[ours + "ln1.w"] = take(state, hf + "input_layernorm.weight")
        out[ours + "ln2.w"] = take(state, hf + "post_attention_layernorm.weight")
    out["stack.ln_final.w"] = take(state, "norm.weight")
    if not tied:
        out["W_U.weight"] = take(state, "lm_head.weight")
    return cfg, out


def split_rows(fused: torch.Tensor, rows: tuple[int, ...], name: str) -> tuple[torch.Tensor, ...]:
    """A fused weight [sum(rows), d_in] cut into its parts, in order (Phi-3's qkv_proj: Q, K, V; gate_up: gate, up)."""
    if fused.ndim != 2 or fused.shape[0] != sum(rows):
        raise CheckpointError(f"weight {name} has shape {list(fused.shape)}: {' + '.join(map(str, rows))} = "
                              f"{sum(rows)} rows were expected")
    return tuple(fused.split(list(rows), dim=0))
