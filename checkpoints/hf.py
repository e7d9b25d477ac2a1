"""Hugging Face checkpoints (GPT-2, Llama/Qwen2/Qwen3/Mistral, BERT) converted into this project's modules.

Each converter maps a Hugging Face config + state dict to a `TransformerConfig` and our
weight names; `load_hf_directory` opens a whole directory (safetensors only, never pickle).
`HF_FIELDS` lists, per architecture, every config field the converter understands; any other
field is refused unless it holds its default value (checkpoints.base.refuse_unimplemented).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from checkpoints.base import (
    WEIGHTS_FILE,
    CheckpointError,
    ConfigFields,
    LoadedModel,
    StateDict,
    build_model,
    read_weights,
    refuse_unimplemented,
)
from checkpoints.file_precision import current_policy, in_file_precision
from checkpoints.hf_common import (
    ATTENTION_PROJECTIONS,
    GENERIC_FIELDS,
    activation,
    loader_name,
    projections,
    strip_prefix,
    take,
)
from checkpoints.hf_gemma import GEMMA_COMMON, convert_gemma
from checkpoints.hf_phi import PHI3_FIELDS, convert_phi3
from checkpoints.hf_rope import rope_settings
from checkpoints.hf_tokenizer import load_hf_tokenizer
from model.config import ConfigError, TransformerConfig
from model.stored_weights import stored_nbytes

# ---------------------------------------------------------------- the fields each converter understands

_LLAMA_COMMON = GENERIC_FIELDS | ConfigFields(
    read=frozenset({
        "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
        "num_key_value_heads", "head_dim", "hidden_act", "max_position_embeddings", "rms_norm_eps",
        "rope_parameters", "rope_theta", "rope_scaling",
    }),
    # pretraining_tp: the same matmuls in slices; is_llama_config: a flag nanotron writes (SmolLM2)
    inert=frozenset({"attention_dropout", "pretraining_tp", "is_llama_config"}),
    defaults={"rope_interleaved": False},  # nanotron's pair order; transformers' layout splits halves
)
HF_FIELDS: dict[str, ConfigFields] = {
    "gpt2": GENERIC_FIELDS | ConfigFields(
        read=frozenset({
            "vocab_size", "n_positions", "n_embd", "n_layer", "n_head", "n_inner", "activation_function",
            "layer_norm_epsilon", "scale_attn_by_inverse_layer_idx",
        }),
        inert=frozenset({
            "resid_pdrop", "embd_pdrop", "attn_pdrop", "summary_type", "summary_use_proj", "summary_activation",
            "summary_proj_to_labels", "summary_first_dropout",
            "reorder_and_upcast_attn",  # float32 softmax order: this project computes in float32 throughout
            "n_ctx",  # an old alias that transformers no longer reads (n_positions is the context)
        }),
        defaults={"scale_attn_weights": True},
    ),
    "llama": _LLAMA_COMMON | ConfigFields(frozenset({"attention_bias", "mlp_bias"}), frozenset(), {}),
    "mistral": _LLAMA_COMMON | ConfigFields(frozenset({"sliding_window"}), frozenset(), {}),
    "qwen2": _LLAMA_COMMON | ConfigFields(
        frozenset({"use_sliding_window", "sliding_window", "max_window_layers", "layer_types"}),
        frozenset(),
        {"use_mrope": False},
    ),
    # Qwen3: Qwen2's windows, Llama's attention_bias (Q, K, V and O), and RMSNorm on each head's q and k
    "qwen3": _LLAMA_COMMON | ConfigFields(
        frozenset({"attention_bias", "use_sliding_window", "sliding_window", "max_window_layers", "layer_types"}),
        frozenset(),
        {},
    ),
    # Gemma 2 / Gemma 3 (text): norms around each sub-layer, GeGLU, local (sliding) and global layers
    "gemma2": GEMMA_COMMON,
    "gemma3_text": GEMMA_COMMON | ConfigFields(
        # rope_local_base_freq: the local layers' RoPE base (older configs; rope_parameters.sliding_attention now);
        # sliding_window_pattern: what layer_types was made from (one global layer every n)
        frozenset({"rope_local_base_freq", "sliding_window_pattern", "_sliding_window_pattern"}), frozenset(), {}),
    "phi3": _LLAMA_COMMON | PHI3_FIELDS,  # checkpoints/hf_phi.py
    "bert": GENERIC_FIELDS | ConfigFields(
        read=frozenset({
            "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
            "hidden_act", "max_position_embeddings", "type_vocab_size", "layer_norm_eps", "pad_token_id",
        }),
        inert=frozenset({"hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout"}),
        defaults={"position_embedding_type": "absolute"},
    ),
}

def convert_gpt2(hf_config: dict[str, Any], state: StateDict) -> tuple[TransformerConfig, StateDict]:
    """GPT-2: learned positions, Pre-LN LayerNorm, tanh GELU, fused Conv1D c_attn stored [in, out]."""
    state = strip_prefix(state, ("transformer.",))
    d_model, n_layers = hf_config["n_embd"], hf_config["n_layer"]
    cfg = TransformerConfig(
        architecture="decoder",
        vocab_size=hf_config["vocab_size"],
        d_model=d_model,
        n_layers=n_layers,
        n_heads=hf_config["n_head"],
        d_mlp=hf_config.get("n_inner") or 4 * d_model,
        n_ctx=hf_config.get("n_positions", 1024),
        pos_encoding="learned",
        norm="layernorm",
        norm_placement="pre",
        norm_eps=hf_config.get("layer_norm_epsilon", 1e-5),
        activation=activation(hf_config, "activation_function", "gelu_new"),
        bias=True,
        scale_attn_by_layer=bool(hf_config.get("scale_attn_by_inverse_layer_idx", False)),
        tied_embeddings="lm_head.weight" not in state or bool(hf_config.get("tie_word_embeddings", True)),
    )
    out: StateDict = {
        "stack.embed.W_E.weight": take(state, "wte.weight"),
        "stack.embed.W_pos.weight": take(state, "wpe.weight"),
    }
    for layer in range(n_layers):
        hf, ours = f"h.{layer}.", f"stack.blocks.{layer}."
        w_qkv = take(state, hf + "attn.c_attn.weight").T  # Conv1D [in, 3*out] -> Linear [3*out, in]
        b_qkv = take(state, hf + "attn.c_attn.bias")
        for part, w, b in zip(("W_Q", "W_K", "W_V"), w_qkv.chunk(3, 0), b_qkv.chunk(3, 0), strict=True):
            out[ours + f"attn.{part}.weight"], out[ours + f"attn.{part}.bias"] = w, b
        out[ours + "attn.W_O.weight"] = take(state, hf + "attn.c_proj.weight").T
        out[ours + "attn.W_O.bias"] = take(state, hf + "attn.c_proj.bias")
        out[ours + "mlp.W_in.weight"] = take(state, hf + "mlp.c_fc.weight").T
        out[ours + "mlp.W_in.bias"] = take(state, hf + "mlp.c_fc.bias")
        out[ours + "mlp.W_out.weight"] = take(state, hf + "mlp.c_proj.weight").T
        out[ours + "mlp.W_out.bias"] = take(state, hf + "mlp.c_proj.bias")
        for hf_ln, our_ln in (("ln_1", "ln1"), ("ln_2", "ln2")):
            out[ours + f"{our_ln}.w"] = take(state, hf + f"{hf_ln}.weight")
            out[ours + f"{our_ln}.b"] = take(state, hf + f"{hf_ln}.bias")
    out["stack.ln_final.w"], out["stack.ln_final.b"] = take(state, "ln_f.weight"), take(state, "ln_f.bias")
    if not cfg.tied_embeddings:
        out["W_U.weight"] = take(state, "lm_head.weight")
    return cfg, out


def _windows(hf_config: dict[str, Any], model_type: str, n_layers: int) -> tuple[int | None, tuple[int, ...] | None]:
    """(sliding window, the layers it applies to or None for all), as transformers reads the config.

    Mistral: `sliding_window` (default 4096) on every layer. Qwen2: only with `use_sliding_window`, on the
    layers `layer_types` names "sliding_attention" (by default those from `max_window_layers` on).
    """
    if model_type == "mistral":
        return hf_config.get("sliding_window", 4096), None
    if model_type not in ("qwen2", "qwen3"):
        return None, None
    window = hf_config.get("sliding_window", 4096) if hf_config.get("use_sliding_window", False) else None
    first = hf_config.get("max_window_layers", 28)
    default_types = [
        "sliding_attention" if window is not None and i >= first else "full_attention" for i in range(n_layers)
    ]
    types = hf_config.get("layer_types") or default_types
    loader = loader_name(model_type)
    if len(types) != n_layers or set(types) - {"full_attention", "sliding_attention"}:
        raise CheckpointError(f"{loader}: config field layer_types = {types!r} is not implemented")
    windowed = tuple(i for i, kind in enumerate(types) if kind == "sliding_attention")
    if windowed and window is None:
        raise CheckpointError(f"{loader}: config field layer_types = {types!r} names sliding layers without a window")
    if not windowed:
        return None, None
    return window, None if len(windowed) == n_layers else windowed


def convert_llama(hf_config: dict[str, Any], state: StateDict) -> tuple[TransformerConfig, StateDict]:
    """Llama / Qwen2 / Qwen3 / Mistral: RoPE (split halves; linear or llama3 scaling), RMSNorm, gated FFN (SwiGLU),
    GQA; Qwen3 RMS-normalizes each head's q and k before RoPE.

    Biases: Llama's and Qwen3's attention_bias (Q, K, V and O), Llama's mlp_bias; Qwen2 always biases Q, K, V.
    """
    model_type = str(hf_config.get("model_type"))
    loader = loader_name(model_type)
    state = strip_prefix(state, ("model.",))
    d_model, n_heads = hf_config["hidden_size"], hf_config["num_attention_heads"]
    head_dim = hf_config.get("head_dim") or d_model // n_heads
    attention_bias = model_type in ("llama", "qwen3") and bool(hf_config.get("attention_bias", False))
    qkv_bias = attention_bias or model_type == "qwen2"
    mlp_bias = model_type == "llama" and bool(hf_config.get("mlp_bias", False))
    tied = bool(hf_config.get("tie_word_embeddings", False)) or "lm_head.weight" not in state
    n_layers = hf_config["num_hidden_layers"]
    window, window_layers = _windows(hf_config, model_type, n_layers)
    rope_base, rope_freq_factors = rope_settings(hf_config, loader, head_dim)
    qk_norm = model_type == "qwen3"
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
        qk_norm=qk_norm,
        activation=activation(hf_config, "hidden_act", "silu", gated=True),
        bias=False,
        qkv_bias=qkv_bias,
        attn_out_bias=attention_bias,
        mlp_bias=mlp_bias,
        tied_embeddings=tied,
        sliding_window=window,
        window_layers=window_layers,
    )
    out: StateDict = {"stack.embed.W_E.weight": take(state, "embed_tokens.weight")}
    biases = frozenset(ATTENTION_PROJECTIONS if attention_bias else ("q_proj", "k_proj", "v_proj") if qkv_bias else ())
    for layer in range(n_layers):
        hf, ours = f"layers.{layer}.", f"stack.blocks.{layer}."
        out |= projections(state, hf, ours, biases, mlp_bias)
        if qk_norm:
            out[ours + "attn.q_norm_w"] = take(state, hf + "self_attn.q_norm.weight")
            out[ours + "attn.k_norm_w"] = take(state, hf + "self_attn.k_norm.weight")
        out[ours + "ln1.w"] = take(state, hf + "input_layernorm.weight")
        out[ours + "ln2.w"] = take(state, hf + "post_attention_layernorm.weight")
    out["stack.ln_final.w"] = take(state, "norm.weight")
    if not tied:
        out["W_U.weight"] = take(state, "lm_head.weight")
    return cfg, out


def convert_bert(hf_config: dict[str, Any], state: StateDict) -> tuple[TransformerConfig, StateDict]:
    """BERT: learned positions + segment embeddings + embedding LayerNorm, Post-LN, exact GELU.

    The model outputs the last hidden state (no MLM head), as sentence encoders use it.
    """
    state = strip_prefix(state, ("bert.",))
    n_layers = hf_config["num_hidden_layers"]
    cfg = TransformerConfig(
        architecture="encoder",
        vocab_size=hf_config["vocab_size"],
        d_model=hf_config["hidden_size"],
        n_layers=n_layers,
        n_heads=hf_config["num_attention_heads"],
        d_mlp=hf_config["intermediate_size"],
        n_ctx=hf_config.get("max_position_embeddings", 512),
        pos_encoding="learned",
        norm="layernorm",
        norm_placement="post",
        norm_eps=hf_config.get("layer_norm_eps", 1e-12),
        activation=activation(hf_config, "hidden_act", "gelu"),
        bias=True,
        final_norm=False,
        lm_head=False,
        n_token_types=hf_config.get("type_vocab_size", 2),
        embed_norm=True,
        pad_token_id=hf_config.get("pad_token_id"),
    )
    e = "embeddings."
    out: StateDict = {
        "stack.embed.W_E.weight": take(state, e + "word_embeddings.weight"),
        "stack.embed.W_pos.weight": take(state, e + "position_embeddings.weight"),
        "stack.embed.W_token_type.weight": take(state, e + "token_type_embeddings.weight"),
        "stack.embed.ln_embed.w": take(state, e + "LayerNorm.weight"),
        "stack.embed.ln_embed.b": take(state, e + "LayerNorm.bias"),
    }
    parts = {
        "attention.self.query": "attn.W_Q",
        "attention.self.key": "attn.W_K",
        "attention.self.value": "attn.W_V",
        "attention.output.dense": "attn.W_O",
        "intermediate.dense": "mlp.W_in",
        "output.dense": "mlp.W_out",
        "attention.output.LayerNorm": "ln1",
        "output.LayerNorm": "ln2",
    }
    for layer in range(n_layers):
        hf, ours = f"encoder.layer.{layer}.", f"stack.blocks.{layer}."
        for hf_name, our_name in parts.items():
            if "LayerNorm" in hf_name:
                out[ours + our_name + ".w"] = take(state, hf + hf_name + ".weight")
                out[ours + our_name + ".b"] = take(state, hf + hf_name + ".bias")
            else:
                out[ours + our_name + ".weight"] = take(state, hf + hf_name + ".weight")
                out[ours + our_name + ".bias"] = take(state, hf + hf_name + ".bias")
    return cfg, out


CONVERTERS: dict[str, Callable[[dict[str, Any], StateDict], tuple[TransformerConfig, StateDict]]] = {
    "gpt2": convert_gpt2,
    "llama": convert_llama,
    "qwen2": convert_llama,
    "qwen3": convert_llama,
    "mistral": convert_llama,
    "gemma2": convert_gemma,
    "gemma3_text": convert_gemma,
    "phi3": convert_phi3,
    "bert": convert_bert,
}


def check_hf_config(hf_config: dict[str, Any]) -> str:
    """The model type, once every field of the config is one its converter implements (else CheckpointError)."""
    model_type = str(hf_config.get("model_type"))
    if model_type not in CONVERTERS:
        raise CheckpointError(f"unsupported architecture {model_type!r}; supported: {', '.join(sorted(CONVERTERS))}")
    refuse_unimplemented(hf_config, HF_FIELDS[model_type], loader_name(model_type))
    return model_type


def convert_hf(hf_config: dict[str, Any], state: StateDict) -> tuple[TransformerConfig, StateDict]:
    model_type = check_hf_config(hf_config)
    try:
        return CONVERTERS[model_type](hf_config, state)
    except KeyError as error:
        raise CheckpointError(f"config.json lacks the field {error}") from error
    except ConfigError as error:
        raise CheckpointError(f"unsupported {model_type} configuration: {error}") from error


def load_hf_directory(directory: Path, hf_config: dict[str, Any], device: str | torch.device = "cpu") -> LoadedModel:
    """A Hugging Face-format directory: config.json (already read: `hf_config`) + model.safetensors + tokenizer."""
    weights = directory / WEIGHTS_FILE
    if not weights.is_file():
        raise CheckpointError(f"{directory} has no {WEIGHTS_FILE} (only safetensors weights are loaded, never pickles)")
    model_type = check_hf_config(hf_config)
    cfg, state = convert_hf(hf_config, read_weights(weights))
    policy = current_policy()  # above its float32 budget, float16/bfloat16 matrices stay so (file_precision.py)
    stored = policy.keeps_file_precision(sum(t.numel() for t in state.values()), device)
    model = build_model(cfg, in_file_precision(state) if stored else state, device)
    policy.report(1, 1)
    tokenizer = load_hf_tokenizer(directory, model_type)
    meta: dict[str, Any] = {"source": "huggingface", "model_type": model_type}
    if stored:
        meta["weights_in_memory"] = {"kept": "file precision", **stored_nbytes(model)}
    return LoadedModel(model, tokenizer, meta)
