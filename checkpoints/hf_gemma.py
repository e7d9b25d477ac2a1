"""Gemma 2 / Gemma 3 (text) Hugging Face checkpoints (transformers' Gemma2ForCausalLM / Gemma3ForCausalLM) for
checkpoints/hf.py: norms around each sub-layer, GeGLU, soft caps, local (sliding) and global layers."""

from __future__ import annotations

from typing import Any

from checkpoints.base import CheckpointError, ConfigFields, StateDict
from checkpoints.hf_common import (
    ATTENTION_PROJECTIONS,
    GENERIC_FIELDS,
    activation,
    loader_name,
    projections,
    strip_prefix,
    take,
)
from checkpoints.hf_rope import rope_settings
from model.config import TransformerConfig

GEMMA_COMMON = GENERIC_FIELDS | ConfigFields(
    read=frozenset({
        "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
        "num_key_value_heads", "head_dim", "hidden_activation", "max_position_embeddings", "rms_norm_eps",
        "rope_parameters", "rope_theta", "rope_scaling", "query_pre_attn_scalar", "sliding_window", "layer_types",
        "final_logit_softcapping", "attn_logit_softcapping", "attention_bias", "use_bidirectional_attention",
    }),
    # hidden_act: Gemma's modeling reads hidden_activation only; cache_implementation: how generate() caches
    inert=frozenset({"attention_dropout", "hidden_act", "cache_implementation"}),
    defaults={},
)


def _gemma_rope(hf_config: dict[str, Any], loader: str, head_dim: int) -> tuple[float, tuple[float, ...] | None,
                                                                              float | None]:
    """(global layers' RoPE base, their frequency factors, the local layers' base or None): Gemma 3 keeps one set of
    RoPE parameters per layer type (rope_parameters.full_attention / .sliding_attention, or the older rope_theta +
    rope_scaling and rope_local_base_freq); Gemma 2 one set for all layers. The local layers' RoPE is unscaled."""
    if hf_config.get("model_type") != "gemma3_text":
        theta, factors = rope_settings(hf_config, loader, head_dim)
        return theta, factors, None
    params = hf_config.get("rope_parameters")
    if isinstance(params, dict) and set(params) <= {"full_attention", "sliding_attention"} and params:
        full = {"rope_parameters": params.get("full_attention") or {"rope_theta": 1_000_000.0}}
        local = {"rope_parameters": params.get("sliding_attention") or {"rope_theta": 10_000.0}}
    else:
        full = {"rope_theta": hf_config.get("rope_theta", 1_000_000.0), "rope_parameters": params,
                "rope_scaling": hf_config.get("rope_scaling")}
        local = {"rope_theta": hf_config.get("rope_local_base_freq", 10_000.0)}
    theta, factors = rope_settings(full, loader, head_dim)
    local_theta, local_factors = rope_settings(local, loader, head_dim)
    if local_factors is not None:
        raise CheckpointError(f"{loader}: config field rope_parameters.sliding_attention = "
                              f"{local['rope_parameters']!r} (RoPE scaling on the local layers) is not implemented")
    return theta, factors, local_theta


def convert_gemma(hf_config: dict[str, Any], state: StateDict) -> tuple[TransformerConfig, StateDict]:
    """Gemma 2 / Gemma 3 (text): embeddings × √d_model, RMSNorm with gain 1 + w (read as that gain), a norm before
    and after each sub-layer, GeGLU with tanh GELU, scores ÷ √query_pre_attn_scalar, soft-capped scores and
    logits (Gemma 2), local sliding-window layers between global ones, Gemma 3's q/k norm and per-type RoPE."""
    model_type = str(hf_config.get("model_type"))
    loader = loader_name(model_type)
    state = strip_prefix(state, ("model.language_model.", "model.", "language_model.model."))
    d_model, n_heads, n_layers = hf_config["hidden_size"], hf_config["num_attention_heads"], \
        hf_config["num_hidden_layers"]
    head_dim = hf_config.get("head_dim") or d_model // n_heads
    if hf_config.get("use_bidirectional_attention"):  # EmbeddingGemma: an encoder, not a causal language model
        raise CheckpointError(f"{loader}: config field use_bidirectional_attention = "
                              f"{hf_config['use_bidirectional_attention']!r} is not implemented")
    pattern = 6 if model_type == "gemma3_text" else 2  # one global layer every `pattern` (transformers' default)
    pattern = int(hf_config.get("sliding_window_pattern", pattern))
    types = hf_config.get("layer_types") or [
        "sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(n_layers)]
    if not isinstance(types, list) or len(types) != n_layers or set(types) - {"full_attention", "sliding_attention"}:
        raise CheckpointError(f"{loader}: config field layer_types = {types!r} is not implemented")
    window = hf_config.get("sliding_window", 4096)
    local = tuple(i for i, kind in enumerate(types) if kind == "sliding_attention") if window else ()
    rope_base, factors, local_base = _gemma_rope(hf_config, loader, head_dim)
    if local_base is not None and len(local) == n_layers:  # every layer local: their RoPE is the only one
        rope_base, factors, local_base = local_base, None, None
    if not local:
        local_base = None
    scalar = hf_config.get("query_pre_attn_scalar", 256)
    soft = {name: hf_config.get(name) for name in ("attn_logit_softcapping", "final_logit_softcapping")}
    if model_type == "gemma3_text":  # transformers' Gemma 3 stores attn_logit_softcapping but never applies it
        soft["attn_logit_softcapping"] = None
    if model_type == "gemma2":
        soft = {name: hf_config.get(name, cap) for name, cap in
                (("attn_logit_softcapping", 50.0), ("final_logit_softcapping", 30.0))}
    bias = bool(hf_config.get("attention_bias", False))
    cfg = TransformerConfig(
        architecture="decoder",
        vocab_size=hf_config["vocab_size"],
        d_model=d_model,
        n_layers=n_layers,
        n_heads=n_heads,
        n_kv_heads=hf_config.get("num_key_value_heads") or n_heads,
        head_dim=None if head_dim * n_heads == d_model else head_dim,
        d_mlp=hf_config["intermediate_size"],
        n_ctx=min(int(hf_config.get("max_position_embeddings", 8192)), 4096),
        pos_encoding="rope",
        rope_base=rope_base,
        rope_freq_factors=factors,
        rope_base_local=local_base,
        norm="rmsnorm",
        norm_placement="pre",
        norm_eps=hf_config.get("rms_norm_eps", 1e-6),
        qk_norm=model_type == "gemma3_text",
        post_norms=True,
        attn_softcap=soft["attn_logit_softcapping"] or None,
        logit_softcap=soft["final_logit_softcapping"] or None,
        score_scale_dim=None if scalar == head_dim else float(scalar),
        activation=activation(hf_config, "hidden_activation", "gelu_pytorch_tanh", gated=True),
        bias=False,
        qkv_bias=bias,
        attn_out_bias=bias,
        tied_embeddings=bool(hf_config.get("tie_word_embeddings", True)) or "lm_head.weight" not in state,
        sliding_window=window if local else None,
        window_layers=(None if len(local) == n_layers else local) if local else None,
        scale_embeddings=True,
    )
    out: StateDict = {"stack.embed.W_E.weight": take(state, "embed_tokens.weight")}
    norms = {"input_layernorm": "ln1", "post_attention_layernorm": "ln1_post",
             "pre_feedforward_layernorm": "ln2", "post_feedforward_layernorm": "ln2_post"}
    for layer in range(n_layers):
        hf, ours = f"layers.{layer}.", f"stack.blocks.{layer}."
        out |= projections(state, hf, ours, frozenset(ATTENTION_PROJECTIONS) if bias else frozenset())
        # Gemma's RMSNorm multiplies by 1 + w (computed in float32): we hold the gain itself, 1 + w
        for hf_name, our_name in norms.items():
            out[ours + f"{our_name}.w"] = 1.0 + take(state, hf + f"{hf_name}.weight").float()
        if cfg.qk_norm:
            out[ours + "attn.q_norm_w"] = 1.0 + take(state, hf + "self_attn.q_norm.weight").float()
            out[ours + "attn.k_norm_w"] = 1.0 + take(state, hf + "self_attn.k_norm.weight").float()
    out["stack.ln_final.w"] = 1.0 + take(state, "norm.weight").float()
    if not cfg.tied_embeddings:
        out["W_U.weight"] = take(state, "lm_head.weight")
    return cfg, out
