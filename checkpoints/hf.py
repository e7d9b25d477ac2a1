"""Hugging Face checkpoints (GPT-2, Llama/Qwen2/Mistral, BERT) converted into this project's modules.

Each converter maps a Hugging Face config + state dict to a `TransformerConfig` and our
weight names; `load_hf_directory` opens a whole directory (safetensors only, never pickle).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from checkpoints.base import (
    WEIGHTS_FILE,
    CheckpointError,
    LoadedModel,
    StateDict,
    build_model,
    read_weights,
)
from model.config import ConfigError, TransformerConfig
from model.tokenizer import HubTokenizer


def _strip_prefix(state: StateDict, prefixes: tuple[str, ...]) -> StateDict:
    out: StateDict = {}
    for name, tensor in state.items():
        for prefix in prefixes:
            if name.startswith(prefix):
                name = name[len(prefix) :]
                break
        out[name] = tensor
    return out


def _take(state: StateDict, name: str) -> torch.Tensor:
    if name not in state:
        raise CheckpointError(f"the checkpoint has no weight {name!r}")
    return state[name]


def convert_gpt2(hf_config: dict[str, Any], state: StateDict) -> tuple[TransformerConfig, StateDict]:
    """GPT-2: learned positions, Pre-LN LayerNorm, tanh GELU, fused Conv1D c_attn stored [in, out]."""
    state = _strip_prefix(state, ("transformer.",))
    d_model, n_layers = hf_config["n_embd"], hf_config["n_layer"]
    activation = hf_config.get("activation_function", "gelu_new")
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
        activation="gelu" if activation == "gelu" else ("relu" if activation == "relu" else "gelu_tanh"),
        bias=True,
        tied_embeddings="lm_head.weight" not in state or bool(hf_config.get("tie_word_embeddings", True)),
    )
    out: StateDict = {
        "stack.embed.W_E.weight": _take(state, "wte.weight"),
        "stack.embed.W_pos.weight": _take(state, "wpe.weight"),
    }
    for layer in range(n_layers):
        hf, ours = f"h.{layer}.", f"stack.blocks.{layer}."
        w_qkv = _take(state, hf + "attn.c_attn.weight").T  # Conv1D [in, 3*out] -> Linear [3*out, in]
        b_qkv = _take(state, hf + "attn.c_attn.bias")
        for part, w, b in zip(("W_Q", "W_K", "W_V"), w_qkv.chunk(3, 0), b_qkv.chunk(3, 0), strict=True):
            out[ours + f"attn.{part}.weight"], out[ours + f"attn.{part}.bias"] = w, b
        out[ours + "attn.W_O.weight"] = _take(state, hf + "attn.c_proj.weight").T
        out[ours + "attn.W_O.bias"] = _take(state, hf + "attn.c_proj.bias")
        out[ours + "mlp.W_in.weight"] = _take(state, hf + "mlp.c_fc.weight").T
        out[ours + "mlp.W_in.bias"] = _take(state, hf + "mlp.c_fc.bias")
        out[ours + "mlp.W_out.weight"] = _take(state, hf + "mlp.c_proj.weight").T
        out[ours + "mlp.W_out.bias"] = _take(state, hf + "mlp.c_proj.bias")
        for hf_ln, our_ln in (("ln_1", "ln1"), ("ln_2", "ln2")):
            out[ours + f"{our_ln}.w"] = _take(state, hf + f"{hf_ln}.weight")
            out[ours + f"{our_ln}.b"] = _take(state, hf + f"{hf_ln}.bias")
    out["stack.ln_final.w"], out["stack.ln_final.b"] = _take(state, "ln_f.weight"), _take(state, "ln_f.bias")
    if not cfg.tied_embeddings:
        out["W_U.weight"] = _take(state, "lm_head.weight")
    return cfg, out


def convert_llama(hf_config: dict[str, Any], state: StateDict) -> tuple[TransformerConfig, StateDict]:
    """Llama / Qwen2 / Mistral: RoPE (split halves), RMSNorm, SwiGLU, GQA, no biases (Qwen2: Q/K/V bias)."""
    state = _strip_prefix(state, ("model.",))
    d_model, n_heads = hf_config["hidden_size"], hf_config["num_attention_heads"]
    head_dim = hf_config.get("head_dim") or d_model // n_heads
    if head_dim * n_heads != d_model:
        raise CheckpointError(
            f"head_dim {head_dim} × {n_heads} heads differs from hidden_size {d_model}: not supported"
        )
    rope = hf_config.get("rope_parameters") or hf_config.get("rope_scaling") or {}
    if rope.get("rope_type", rope.get("type", "default")) not in ("default", None):
        raise CheckpointError(f"RoPE scaling {rope.get('rope_type')!r} is not supported")
    rope_theta = rope.get("rope_theta") or hf_config.get("rope_theta", 10000.0)
    qkv_bias = "layers.0.self_attn.q_proj.bias" in state
    tied = bool(hf_config.get("tie_word_embeddings", False)) or "lm_head.weight" not in state
    window = hf_config.get("sliding_window") if hf_config.get("use_sliding_window", False) else None
    n_layers = hf_config["num_hidden_layers"]
    cfg = TransformerConfig(
        architecture="decoder",
        vocab_size=hf_config["vocab_size"],
        d_model=d_model,
        n_layers=n_layers,
        n_heads=n_heads,
        n_kv_heads=hf_config.get("num_key_value_heads") or n_heads,
        d_mlp=hf_config["intermediate_size"],
        n_ctx=min(int(hf_config.get("max_position_embeddings", 2048)), 4096),
        pos_encoding="rope",
        rope_base=float(rope_theta),
        norm="rmsnorm",
        norm_placement="pre",
        norm_eps=hf_config.get("rms_norm_eps", 1e-6),
        activation="swiglu",
        bias=False,
        qkv_bias=qkv_bias,
        tied_embeddings=tied,
        sliding_window=window,
    )
    out: StateDict = {"stack.embed.W_E.weight": _take(state, "embed_tokens.weight")}
    names = {"q_proj": "W_Q", "k_proj": "W_K", "v_proj": "W_V", "o_proj": "W_O"}
    for layer in range(n_layers):
        hf, ours = f"layers.{layer}.", f"stack.blocks.{layer}."
        for hf_name, our_name in names.items():
            out[ours + f"attn.{our_name}.weight"] = _take(state, hf + f"self_attn.{hf_name}.weight")
            if qkv_bias and hf_name != "o_proj":
                out[ours + f"attn.{our_name}.bias"] = _take(state, hf + f"self_attn.{hf_name}.bias")
        out[ours + "mlp.W_gate.weight"] = _take(state, hf + "mlp.gate_proj.weight")
        out[ours + "mlp.W_in.weight"] = _take(state, hf + "mlp.up_proj.weight")
        out[ours + "mlp.W_out.weight"] = _take(state, hf + "mlp.down_proj.weight")
        out[ours + "ln1.w"] = _take(state, hf + "input_layernorm.weight")
        out[ours + "ln2.w"] = _take(state, hf + "post_attention_layernorm.weight")
    out["stack.ln_final.w"] = _take(state, "norm.weight")
    if not tied:
        out["W_U.weight"] = _take(state, "lm_head.weight")
    return cfg, out


def convert_bert(hf_config: dict[str, Any], state: StateDict) -> tuple[TransformerConfig, StateDict]:
    """BERT: learned positions + segment embeddings + embedding LayerNorm, Post-LN, exact GELU.

    The model outputs the last hidden state (no MLM head), as sentence encoders use it.
    """
    state = _strip_prefix(state, ("bert.",))
    act = hf_config.get("hidden_act", "gelu")
    if act not in ("gelu", "relu", "gelu_new"):
        raise CheckpointError(f"BERT activation {act!r} is not supported")
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
        activation={"gelu": "gelu", "relu": "relu", "gelu_new": "gelu_tanh"}[act],  # type: ignore[arg-type]
        bias=True,
        final_norm=False,
        lm_head=False,
        n_token_types=hf_config.get("type_vocab_size", 2),
        embed_norm=True,
        pad_token_id=hf_config.get("pad_token_id"),
    )
    e = "embeddings."
    out: StateDict = {
        "stack.embed.W_E.weight": _take(state, e + "word_embeddings.weight"),
        "stack.embed.W_pos.weight": _take(state, e + "position_embeddings.weight"),
        "stack.embed.W_token_type.weight": _take(state, e + "token_type_embeddings.weight"),
        "stack.embed.ln_embed.w": _take(state, e + "LayerNorm.weight"),
        "stack.embed.ln_embed.b": _take(state, e + "LayerNorm.bias"),
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
                out[ours + our_name + ".w"] = _take(state, hf + hf_name + ".weight")
                out[ours + our_name + ".b"] = _take(state, hf + hf_name + ".bias")
            else:
                out[ours + our_name + ".weight"] = _take(state, hf + hf_name + ".weight")
                out[ours + our_name + ".bias"] = _take(state, hf + hf_name + ".bias")
    return cfg, out


CONVERTERS: dict[str, Callable[[dict[str, Any], StateDict], tuple[TransformerConfig, StateDict]]] = {
    "gpt2": convert_gpt2,
    "llama": convert_llama,
    "qwen2": convert_llama,
    "mistral": convert_llama,
    "bert": convert_bert,
}


def convert_hf(hf_config: dict[str, Any], state: StateDict) -> tuple[TransformerConfig, StateDict]:
    model_type = hf_config.get("model_type")
    if model_type not in CONVERTERS:
        raise CheckpointError(f"unsupported architecture {model_type!r}; supported: {', '.join(sorted(CONVERTERS))}")
    try:
        return CONVERTERS[model_type](hf_config, state)
    except KeyError as error:
        raise CheckpointError(f"config.json lacks the field {error}") from error
    except ConfigError as error:
        raise CheckpointError(f"unsupported {model_type} configuration: {error}") from error


def load_hf_tokenizer(directory: Path, model_type: str) -> HubTokenizer:
    """tokenizer.json if present, else the classic vocab files (GPT-2 vocab.json + merges.txt, BERT vocab.txt)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    if (directory / "tokenizer.json").is_file():
        kind = "wordpiece" if model_type == "bert" else "bpe"
        return HubTokenizer.from_file(directory / "tokenizer.json", kind)
    if (directory / "vocab.json").is_file() and (directory / "merges.txt").is_file():
        bpe = models.BPE.from_file(str(directory / "vocab.json"), str(directory / "merges.txt"))
        tok = Tokenizer(bpe)
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        return HubTokenizer(tok, "bpe")
    if (directory / "vocab.txt").is_file():
        tok = Tokenizer(models.WordPiece.from_file(str(directory / "vocab.txt"), unk_token="[UNK]"))
        tok.normalizer = normalizers.BertNormalizer(lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        vocab = tok.get_vocab()
        if "[CLS]" in vocab and "[SEP]" in vocab:
            tok.post_processor = processors.BertProcessing(("[SEP]", vocab["[SEP]"]), ("[CLS]", vocab["[CLS]"]))
        tok.decoder = decoders.WordPiece()
        return HubTokenizer(tok, "wordpiece")
    raise CheckpointError(f"{directory} has no tokenizer (tokenizer.json, vocab.json + merges.txt, or vocab.txt)")


def load_hf_directory(directory: Path, hf_config: dict[str, Any], device: str | torch.device = "cpu") -> LoadedModel:
    """A Hugging Face-format directory: config.json (already read: `hf_config`) + model.safetensors + tokenizer."""
    weights = directory / WEIGHTS_FILE
    if not weights.is_file():
        raise CheckpointError(f"{directory} has no {WEIGHTS_FILE} (only safetensors weights are loaded, never pickles)")
    model_type = str(hf_config.get("model_type"))
    if model_type not in CONVERTERS:
        raise CheckpointError(f"unsupported architecture {model_type!r}; supported: {', '.join(sorted(CONVERTERS))}")
    cfg, state = convert_hf(hf_config, read_weights(weights))
    model = build_model(cfg, state, device)
    tokenizer = load_hf_tokenizer(directory, model_type)
    meta = {"source": "huggingface", "model_type": model_type}
    return LoadedModel(model, tokenizer, meta)
