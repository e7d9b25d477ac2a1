"""StarCoder2: RoPE on split halves, LayerNorm (with bias) before each sub-layer, a plain (ungated) FFN with tanh
GELU, grouped K/V heads, a bias on every projection (use_bias), and a sliding window on every layer when the config
sets one.

    h = x + W_O · attn(RoPE(W_Q · LN(x)), RoPE(W_K · LN(x)), W_V · LN(x));   out = h + W_out · gelu_tanh(W_in · LN(h))

Hugging Face `starcoder2` (Starcoder2ForCausalLM: mlp.c_fc and mlp.c_proj, stored as Linear [out, in]); GGUF
`starcoder2` (stored unpermuted: llama.cpp turns it as NEOX, rotate-half; every bias a tensor of its own, so a file
without them, from use_bias = false, is refused as missing a tensor).
"""

from __future__ import annotations

from typing import Any

from checkpoints.base import ConfigFields, StateDict
from checkpoints.families.records import GgufFamily, HfFamily
from checkpoints.gguf_read import GgufRead
from checkpoints.gguf_tensors import ROPE_FREQS, ModelTensors, outside_blocks
from checkpoints.hf_common import ATTENTION_PROJECTIONS, GENERIC_FIELDS, activation, loader_name, strip_prefix, take
from checkpoints.hf_rope import rope_settings
from model.config import TransformerConfig

HF_FIELDS = GENERIC_FIELDS | ConfigFields(
    read=frozenset({
        "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
        "num_key_value_heads", "head_dim", "hidden_act", "max_position_embeddings", "norm_epsilon",
        "rope_parameters", "rope_theta", "rope_scaling", "sliding_window", "use_bias",
    }),
    inert=frozenset({"attention_dropout", "residual_dropout", "embedding_dropout"}),  # dropout: off when it runs
    defaults={},
)


def convert_hf(hf_config: dict[str, Any], state: StateDict) -> tuple[TransformerConfig, StateDict]:
    loader = loader_name("starcoder2")
    state = strip_prefix(state, ("model.",))
    d_model, n_heads, n_layers = hf_config["hidden_size"], hf_config["num_attention_heads"], \
        hf_config["num_hidden_layers"]
    head_dim = hf_config.get("head_dim") or d_model // n_heads
    bias = bool(hf_config.get("use_bias", True))
    tied = bool(hf_config.get("tie_word_embeddings", True)) or "lm_head.weight" not in state
    rope_base, rope_freq_factors = rope_settings(hf_config, loader, head_dim)
    cfg = TransformerConfig(
        architecture="decoder", vocab_size=hf_config["vocab_size"], d_model=d_model, n_layers=n_layers,
        n_heads=n_heads, n_kv_heads=hf_config.get("num_key_value_heads") or n_heads,
        head_dim=None if head_dim * n_heads == d_model else head_dim, d_mlp=hf_config["intermediate_size"],
        n_ctx=min(int(hf_config.get("max_position_embeddings", 4096)), 4096), pos_encoding="rope",
        rope_base=rope_base, rope_freq_factors=rope_freq_factors, norm="layernorm", norm_placement="pre",
        norm_eps=hf_config.get("norm_epsilon", 1e-5),
        activation=activation(hf_config, "hidden_act", "gelu_pytorch_tanh"), bias=bias, tied_embeddings=tied,
        sliding_window=hf_config.get("sliding_window"),
    )
    parts = {f"self_attn.{hf_name}": f"attn.{our_name}" for hf_name, our_name in ATTENTION_PROJECTIONS.items()}
    parts |= {"mlp.c_fc": "mlp.W_in", "mlp.c_proj": "mlp.W_out"}
    out: StateDict = {"stack.embed.W_E.weight": take(state, "embed_tokens.weight")}
    for layer in range(n_layers):
        hf, ours = f"layers.{layer}.", f"stack.blocks.{layer}."
        for hf_name, our_name in parts.items():
            for kind in ("weight", "bias") if bias else ("weight",):
                out[f"{ours}{our_name}.{kind}"] = take(state, f"{hf}{hf_name}.{kind}")
        for hf_name, our_name in (("input_layernorm", "ln1"), ("post_attention_layernorm", "ln2")):
            out[f"{ours}{our_name}.w"] = take(state, f"{hf}{hf_name}.weight")
            out[f"{ours}{our_name}.b"] = take(state, f"{hf}{hf_name}.bias")
    out["stack.ln_final.w"], out["stack.ln_final.b"] = take(state, "norm.weight"), take(state, "norm.bias")
    if not tied:
        out["W_U.weight"] = take(state, "lm_head.weight")
    return cfg, out


def gguf_config(read: GgufRead) -> TransformerConfig:
    return TransformerConfig(
        **read.common(), d_mlp=int(read.get("feed_forward_length")), pos_encoding="rope",
        rope_base=float(read.get("rope.freq_base", 10000.0)),
        rope_freq_factors=read.rope_factors(read.head_size, ROPE_FREQS), norm="layernorm",
        norm_eps=float(read.get("attention.layer_norm_epsilon")), activation="gelu_tanh", bias=True,
    )


def convert_gguf(cfg: TransformerConfig, source: ModelTensors) -> StateDict:
    out: StateDict = {"stack.embed.W_E.weight": source.get("token_embd.weight")}
    names = {"attn_q": "attn.W_Q", "attn_k": "attn.W_K", "attn_v": "attn.W_V", "attn_output": "attn.W_O",
             "ffn_up": "mlp.W_in", "ffn_down": "mlp.W_out"}
    for layer in range(cfg.n_layers):
        blk, ours = f"blk.{layer}.", f"stack.blocks.{layer}."
        for gguf_name, our_name in names.items():
            for kind in ("weight", "bias"):
                out[f"{ours}{our_name}.{kind}"] = source.get(f"{blk}{gguf_name}.{kind}")
        for gguf_name, our_name in (("attn_norm", "ln1"), ("ffn_norm", "ln2")):
            out[f"{ours}{our_name}.w"] = source.get(f"{blk}{gguf_name}.weight")
            out[f"{ours}{our_name}.b"] = source.get(f"{blk}{gguf_name}.bias")
    out["stack.ln_final.b"] = source.get("output_norm.bias")
    return out | outside_blocks(cfg, source, (ROPE_FREQS,))


HF = HfFamily("starcoder2", HF_FIELDS, convert_hf)
GGUF = GgufFamily(
    "starcoder2",
    frozenset({"vocab_size", "context_length", "embedding_length", "block_count", "feed_forward_length",
               "attention.head_count", "attention.head_count_kv", "attention.layer_norm_epsilon", "rope.freq_base"}),
    gguf_config, convert_gguf, pre_splits={"starcoder": "digits_gpt2"},  # StarCoder's vocabulary: digits one by one
)
