"""BERT: an encoder; learned positions plus segment embeddings and an embedding LayerNorm, LayerNorm after each
sub-layer (Post-LN), exact GELU.

    h = LN(x + W_O · attn(W_Q · x, W_K · x, W_V · x));   out = LN(h + W_out · gelu(W_in · h))

Hugging Face `bert` (BertModel; its WordPiece tokenizer). The model outputs the last hidden state (no MLM head), as
sentence encoders use it. No GGUF record: llama.cpp's `bert` files are refused by name.
"""

from __future__ import annotations

from typing import Any

from checkpoints.base import ConfigFields, StateDict
from checkpoints.families.records import HfFamily
from checkpoints.hf_common import GENERIC_FIELDS, activation, strip_prefix, take
from model.config import TransformerConfig

HF_FIELDS = GENERIC_FIELDS | ConfigFields(
    read=frozenset({
        "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
        "hidden_act", "max_position_embeddings", "type_vocab_size", "layer_norm_eps", "pad_token_id",
    }),
    inert=frozenset({"hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout"}),
    defaults={"position_embedding_type": "absolute"},
)
# Hugging Face name in a layer -> ours
PARTS = {
    "attention.self.query": "attn.W_Q",
    "attention.self.key": "attn.W_K",
    "attention.self.value": "attn.W_V",
    "attention.output.dense": "attn.W_O",
    "intermediate.dense": "mlp.W_in",
    "output.dense": "mlp.W_out",
}
NORMS = {"attention.output.LayerNorm": "ln1", "output.LayerNorm": "ln2"}


def convert_hf(hf_config: dict[str, Any], state: StateDict) -> tuple[TransformerConfig, StateDict]:
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
    for layer in range(n_layers):
        hf, ours = f"encoder.layer.{layer}.", f"stack.blocks.{layer}."
        for hf_name, our_name in PARTS.items():
            out[ours + our_name + ".weight"] = take(state, hf + hf_name + ".weight")
            out[ours + our_name + ".bias"] = take(state, hf + hf_name + ".bias")
        for hf_name, our_name in NORMS.items():
            out[ours + our_name + ".w"] = take(state, hf + hf_name + ".weight")
            out[ours + our_name + ".b"] = take(state, hf + hf_name + ".bias")
    return cfg, out


HF = HfFamily("bert", HF_FIELDS, convert_hf, tokenizer="wordpiece")
