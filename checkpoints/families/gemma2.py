"""Gemma 2, and the Gemma layout that Gemma 3 shares: embeddings × √d_model, RMSNorm with gain 1 + w, a norm before
and after each sub-layer, GeGLU with tanh GELU, scores ÷ √query_pre_attn_scalar, local sliding-window layers between
global ones.

    h = x + norm'(W_O · attn(q, k, v));   out = h + norm'(W_out · (gelu_tanh(W_gate · norm(h)) ⊙ W_in · norm(h)))

A family of this layout is a `GemmaLayout`. Gemma 2 soft-caps its scores and logits, c · tanh(x / c), and has one
global layer every 2. Hugging Face `gemma2` (Gemma2ForCausalLM); GGUF `gemma2`, whose norms llama.cpp's converter
stores as the gain 1 + w already, and which it runs with queries scaled by 1/√key_length except in the 27B models
(known by their block count: query_pre_attn_scalar = embedding_length / head_count, llama.cpp's f_attention_scale).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from checkpoints.base import CheckpointError, ConfigFields, StateDict
from checkpoints.families.llama import LLAMA_KEYS
from checkpoints.families.records import GgufFamily, HfFamily
from checkpoints.gguf_read import GgufRead, shown
from checkpoints.gguf_tensors import ROPE_FREQS, ModelTensors, outside_blocks
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


@dataclass(frozen=True)
class GemmaLayout:
    """What a family of the Gemma layout sets."""

    every: int            # one global layer every `every` (the rest local), unless the config lists them
    blocks_27b: int       # GGUF: the block count of the 27B model, whose query scalar is d_model / n_heads
    soft_caps: bool       # scores and final logits soft-capped (Gemma 2)
    qk_norm: bool         # an RMSNorm on each head's q and k (Gemma 3)
    local_rope: bool      # the local layers have a RoPE base of their own (Gemma 3)


HF_FIELDS = GENERIC_FIELDS | ConfigFields(
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
# GGUF: local (sliding-window) layers; Gemma 2's soft caps
GGUF_KEYS = LLAMA_KEYS | {"attention.sliding_window", "attention.sliding_window_pattern"}
CAPS = ("attn_logit_softcapping", "final_logit_softcapping")


def gemma_rope(hf_config: dict[str, Any], loader: str, head_dim: int,
               local_rope: bool) -> tuple[float, tuple[float, ...] | None, float | None]:
    """(global layers' RoPE base, their frequency factors, the local layers' base or None). With `local_rope`
    (Gemma 3) one set of RoPE parameters per layer type (rope_parameters.full_attention / .sliding_attention, or
    the older rope_theta + rope_scaling and rope_local_base_freq), else one set for all layers. The local
    layers' RoPE is unscaled."""
    if not local_rope:
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


def convert_hf(layout: GemmaLayout, hf_config: dict[str, Any], state: StateDict) -> tuple[TransformerConfig, StateDict]:
    """A Gemma directory (transformers' Gemma2ForCausalLM / Gemma3ForCausalLM): its config and weights."""
    loader = loader_name(str(hf_config.get("model_type")))
    state = strip_prefix(state, ("model.language_model.", "model.", "language_model.model."))
    d_model, n_heads, n_layers = hf_config["hidden_size"], hf_config["num_attention_heads"], \
        hf_config["num_hidden_layers"]
    head_dim = hf_config.get("head_dim") or d_model // n_heads
    if hf_config.get("use_bidirectional_attention"):  # EmbeddingGemma: an encoder, not a causal language model
        raise CheckpointError(f"{loader}: config field use_bidirectional_attention = "
                              f"{hf_config['use_bidirectional_attention']!r} is not implemented")
    pattern = int(hf_config.get("sliding_window_pattern", layout.every))
    types = hf_config.get("layer_types") or [
        "sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(n_layers)]
    if not isinstance(types, list) or len(types) != n_layers or set(types) - {"full_attention", "sliding_attention"}:
        raise CheckpointError(f"{loader}: config field layer_types = {types!r} is not implemented")
    window = hf_config.get("sliding_window", 4096)
    local = tuple(i for i, kind in enumerate(types) if kind == "sliding_attention") if window else ()
    rope_base, factors, local_base = gemma_rope(hf_config, loader, head_dim, layout.local_rope)
    if local_base is not None and len(local) == n_layers:  # every layer local: their RoPE is the only one
        rope_base, factors, local_base = local_base, None, None
    if not local:
        local_base = None
    scalar = hf_config.get("query_pre_attn_scalar", 256)
    if layout.soft_caps:
        soft = {name: hf_config.get(name, cap) for name, cap in zip(CAPS, (50.0, 30.0), strict=True)}
    else:  # transformers' Gemma 3 stores attn_logit_softcapping but never applies it
        soft = {"attn_logit_softcapping": None, "final_logit_softcapping": hf_config.get("final_logit_softcapping")}
    bias = bool(hf_config.get("attention_bias", False))
    cfg = TransformerConfig(
        architecture="decoder", vocab_size=hf_config["vocab_size"], d_model=d_model, n_layers=n_layers,
        n_heads=n_heads, n_kv_heads=hf_config.get("num_key_value_heads") or n_heads,
        head_dim=None if head_dim * n_heads == d_model else head_dim, d_mlp=hf_config["intermediate_size"],
        n_ctx=min(int(hf_config.get("max_position_embeddings", 8192)), 4096), pos_encoding="rope",
        rope_base=rope_base, rope_freq_factors=factors, rope_base_local=local_base, norm="rmsnorm",
        norm_placement="pre", norm_eps=hf_config.get("rms_norm_eps", 1e-6), qk_norm=layout.qk_norm, post_norms=True,
        attn_softcap=soft["attn_logit_softcapping"] or None, logit_softcap=soft["final_logit_softcapping"] or None,
        score_scale_dim=None if scalar == head_dim else float(scalar),
        activation=activation(hf_config, "hidden_activation", "gelu_pytorch_tanh", gated=True), bias=False,
        qkv_bias=bias, attn_out_bias=bias,
        tied_embeddings=bool(hf_config.get("tie_word_embeddings", True)) or "lm_head.weight" not in state,
        sliding_window=window if local else None,
        window_layers=(None if len(local) == n_layers else local) if local else None, scale_embeddings=True,
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


def gguf_config(layout: GemmaLayout, read: GgufRead) -> TransformerConfig:
    """A Gemma file as llama.cpp runs it (attention.sliding_window_pattern: one true/false per layer, by default
    llama.cpp's set_swa_pattern: layer i is local unless (i + 1) % every == 0)."""
    common = read.common()
    n_layers, n_heads, d_model, head_size = common["n_layers"], common["n_heads"], common["d_model"], read.head_size
    window = int(read.number("attention.sliding_window", 0.0)) or None
    pattern = read.metadata.get(read.prefix + "attention.sliding_window_pattern")
    if pattern is None:
        pattern = [(i + 1) % layout.every != 0 for i in range(n_layers)]
    if not (isinstance(pattern, list) and len(pattern) == n_layers and all(isinstance(p, bool) for p in pattern)):
        raise CheckpointError(f"{read.prefix}attention.sliding_window_pattern = {shown(pattern)} is not implemented "
                              f"(one true/false per layer, {n_layers} layers)")
    local = tuple(i for i, is_local in enumerate(pattern) if is_local) if window else ()
    rope_base = read.number("rope.freq_base", 10000.0)
    factors = read.rope_factors(head_size, ROPE_FREQS)
    local_base: float | None = read.number("rope.freq_base_swa", 10000.0) if layout.local_rope else None
    if local_base is not None and len(local) == n_layers:  # every layer local: theirs is the only RoPE
        rope_base, factors, local_base = local_base, None, None
    if not local:
        local_base = None
    scalar = d_model // n_heads if n_layers == layout.blocks_27b else head_size
    caps = {name: read.number(name) if layout.soft_caps else 0.0 for name in CAPS}
    return TransformerConfig(
        **common, d_mlp=int(read.number("feed_forward_length")), pos_encoding="rope", rope_base=rope_base,
        rope_freq_factors=factors, rope_base_local=local_base, norm="rmsnorm",
        norm_eps=read.number("attention.layer_norm_rms_epsilon"), qk_norm=layout.qk_norm, post_norms=True,
        attn_softcap=caps["attn_logit_softcapping"] or None, logit_softcap=caps["final_logit_softcapping"] or None,
        score_scale_dim=None if scalar == head_size else float(scalar), activation="geglu_tanh", bias=False,
        sliding_window=window if local else None,
        window_layers=(None if len(local) == n_layers else local) if local else None, scale_embeddings=True,
    )


def convert_gguf(cfg: TransformerConfig, source: ModelTensors) -> StateDict:
    """Gemma tensor names -> ours (Q/K rows stored unpermuted). llama.cpp's converter stores every norm's gain as
    1 + w (Gemma's RMSNorm multiplies by 1 + w): that gain is what our norms hold, so it is read as is."""
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


def records(name: str, gguf_arch: str, layout: GemmaLayout, hf_fields: ConfigFields,
            gguf_keys: frozenset[str]) -> tuple[HfFamily, GgufFamily]:
    """A family of the Gemma layout: its Hugging Face record (`name`) and its GGUF record (`gguf_arch`). Its GGUF
    files carry a SentencePiece vocabulary (tokenizer.ggml.model = llama): no pre-split."""
    return (HfFamily(name, HF_FIELDS | hf_fields, partial(convert_hf, layout)),
            GgufFamily(gguf_arch, gguf_keys, partial(gguf_config, layout), convert_gguf))


LAYOUT = GemmaLayout(every=2, blocks_27b=46, soft_caps=True, qk_norm=False, local_rope=False)
HF, GGUF = records("gemma2", "gemma2", LAYOUT, ConfigFields(frozenset(), frozenset(), {}), GGUF_KEYS | set(CAPS))
