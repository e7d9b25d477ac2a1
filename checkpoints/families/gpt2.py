"""GPT-2: learned positions, LayerNorm before each sub-layer, tanh GELU, biases everywhere, Q, K and V in one matrix.

    h = x + W_O · attn(W_Q · LN(x), W_K · LN(x), W_V · LN(x));   out = h + W_out · gelu(W_in · LN(h))

Hugging Face `gpt2` (GPT2LMHeadModel: Conv1D weights stored [in, out]); GGUF `gpt2` (the fused attn_qkv stored as a
Linear [3 · d_model, d_model]).
"""

from __future__ import annotations

from typing import Any

from checkpoints.base import CheckpointError, ConfigFields, StateDict
from checkpoints.families.records import GgufFamily, HfFamily
from checkpoints.gguf_read import GgufRead
from checkpoints.gguf_tensors import ModelTensors, Shapes
from checkpoints.hf_common import GENERIC_FIELDS, activation, strip_prefix, take
from model.config import TransformerConfig

HF_FIELDS = GENERIC_FIELDS | ConfigFields(
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
)


def convert_hf(hf_config: dict[str, Any], state: StateDict) -> tuple[TransformerConfig, StateDict]:
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
        for hf_name, our_name in (("attn.c_proj", "attn.W_O"), ("mlp.c_fc", "mlp.W_in"), ("mlp.c_proj", "mlp.W_out")):
            out[f"{ours}{our_name}.weight"] = take(state, f"{hf}{hf_name}.weight").T
            out[f"{ours}{our_name}.bias"] = take(state, f"{hf}{hf_name}.bias")
        for hf_ln, our_ln in (("ln_1", "ln1"), ("ln_2", "ln2")):
            out[ours + f"{our_ln}.w"] = take(state, hf + f"{hf_ln}.weight")
            out[ours + f"{our_ln}.b"] = take(state, hf + f"{hf_ln}.bias")
    out["stack.ln_final.w"], out["stack.ln_final.b"] = take(state, "ln_f.weight"), take(state, "ln_f.bias")
    if not cfg.tied_embeddings:
        out["W_U.weight"] = take(state, "lm_head.weight")
    return cfg, out


def gguf_config(read: GgufRead) -> TransformerConfig:
    common = read.common()
    if read.head_size * common["n_heads"] != common["d_model"]:
        raise CheckpointError(f"gpt2.attention.key_length = {read.head_size}: a head size other than "
                              "embedding_length / head_count is not implemented for gpt2")
    return TransformerConfig(
        **common, d_mlp=int(read.get("feed_forward_length", 4 * common["d_model"])), pos_encoding="learned",
        norm="layernorm", norm_eps=float(read.get("attention.layer_norm_epsilon")), activation="gelu_tanh", bias=True,
    )


def gguf_shapes(cfg: TransformerConfig, shapes: Shapes) -> Shapes:
    return shapes | {"position_embd.weight": ((cfg.n_ctx, cfg.d_model),
                                              f"context_length {cfg.n_ctx}, embedding_length {cfg.d_model}")}


def convert_gguf(cfg: TransformerConfig, source: ModelTensors) -> StateDict:
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


HF = HfFamily("gpt2", HF_FIELDS, convert_hf)
GGUF = GgufFamily(
    "gpt2",
    frozenset({"vocab_size", "context_length", "embedding_length", "block_count", "feed_forward_length",
               "attention.head_count", "attention.head_count_kv", "attention.layer_norm_epsilon"}),
    gguf_config, convert_gguf, gguf_shapes, pre_splits={"gpt-2": "gpt2"}, factor_tensors=(), rope_scaling=False,
    context_cap=None,
)
