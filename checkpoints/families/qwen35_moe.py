"""Qwen3.5-MoE (text): Qwen3.5's hybrid (checkpoints/families/qwen35.py: gated DeltaNet layers between gated
full-attention layers) with a mixture of experts in place of every layer's FFN, and beside it a shared expert
(model/moe.py):

    probs  = softmax(W_router · norm(h))                              [expert]
    chosen = the num_experts_per_tok largest probs; weight = probs[chosen] ÷ their sum
    g      = sigmoid(W_shared_gate · norm(h))                          one number per token
    out    = h + Σ over chosen e of weight_e · FFN_e(norm(h))  +  g · FFN_shared(norm(h))

with SwiGLU experts moe_intermediate_size wide and a SwiGLU shared expert shared_expert_intermediate_size wide.

Hugging Face `qwen3_5_moe_text` (Qwen3_5MoeForCausalLM): every layer has its experts, and the chosen weights are
always renormalised (transformers' config has no mlp_only_layers, decoder_sparse_step or norm_topk_prob: a
config.json that writes them is accepted only at what transformers does); an intermediate_size there sizes no layer.
GGUF `qwen35moe`, as llama.cpp's converter writes it: qwen35's tensors, with ffn_gate_inp, ffn_gate_exps, ffn_up_exps
(or the two merged, ffn_gate_up_exps), ffn_down_exps, and the shared expert's ffn_gate_shexp, ffn_up_shexp,
ffn_down_shexp and gate ffn_gate_inp_shexp [1, d_model]; llama.cpp's qwen35moe renormalises the chosen weights and
gates with a softmax whatever a file says, so other values of those keys are refused by name.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import checkpoints.families.qwen35 as qwen35
from checkpoints.base import CheckpointError, ConfigFields, StateDict
from checkpoints.experts import expert_shapes
from checkpoints.families.qwen3_moe import gguf_moe_fields
from checkpoints.families.records import HfFamily
from checkpoints.gguf_read import GgufRead, shown
from checkpoints.gguf_tensors import Shapes
from model.config import TransformerConfig

HF_FIELDS = ConfigFields(
    read=(qwen35.HF_FIELDS.read - {"intermediate_size"}) | {
        "num_experts", "num_experts_per_tok", "moe_intermediate_size", "shared_expert_intermediate_size"},
    # intermediate_size: the dense FFN's width, which no layer has; the router's training loss and output flag
    # change no number of the forward pass
    inert=qwen35.HF_FIELDS.inert | {"intermediate_size", "router_aux_loss_coef", "output_router_logits"},
    # what transformers' Qwen3_5MoeDecoderLayer does: experts in every layer, their weights renormalised
    defaults={**qwen35.HF_FIELDS.defaults, "decoder_sparse_step": 1, "norm_topk_prob": True},
)


def moe_fields(hf_config: dict[str, Any], loader: str) -> dict[str, Any]:
    """Experts in every layer (transformers' defaults: 256 of 512, 8 chosen, a shared expert of 512)."""
    return {"n_experts": hf_config.get("num_experts", 256), "n_experts_used": hf_config.get("num_experts_per_tok", 8),
            "expert_d_mlp": hf_config.get("moe_intermediate_size", 512), "expert_norm_topk": True,
            "shared_expert_d_mlp": hf_config.get("shared_expert_intermediate_size", 512)}


def convert_hf(hf_config: dict[str, Any], state: StateDict) -> tuple[TransformerConfig, StateDict]:
    """A Qwen3.5-MoE text directory (Qwen3_5MoeForCausalLM): qwen35's, with the experts in every layer."""
    return qwen35.convert_hf(hf_config, state, moe_fields)


def gguf_moe(read: GgufRead) -> dict[str, Any]:
    """qwen3moe's expert keys (llama.cpp renormalises, gates with a softmax), and the one shared expert."""
    count = read.get("expert_shared_count", 1)
    if count != 1:
        raise CheckpointError(f"{read.prefix}expert_shared_count = {shown(count)} is not implemented: llama.cpp's "
                              "qwen35moe has one shared expert per layer")
    scale = read.get("expert_weights_scale", 1.0)
    if scale != 1.0:
        raise CheckpointError(f"{read.prefix}expert_weights_scale = {shown(scale)} (a factor on the chosen experts' "
                              "weights) is not implemented")
    return gguf_moe_fields(read) | {"shared_expert_d_mlp": int(read.number("expert_shared_feed_forward_length"))}


def gguf_config(read: GgufRead) -> TransformerConfig:
    """A qwen35moe file: qwen35's layers, each with its experts and shared expert."""
    return qwen35.gguf_config(read, gguf_moe)


def gguf_shapes(cfg: TransformerConfig, shapes: Shapes) -> Shapes:
    return expert_shapes(cfg, qwen35.gguf_shapes(cfg, shapes))


HF = HfFamily("qwen3_5_moe_text", HF_FIELDS, convert_hf)
GGUF = dataclasses.replace(
    qwen35.GGUF, arch="qwen35moe", config=gguf_config, shapes=gguf_shapes,
    # feed_forward_length, when a file has it, sizes no layer (llama.cpp reads it only for expert widths a file lacks,
    # which this loader requires)
    keys=qwen35.GGUF_KEYS | {
        "expert_count", "expert_used_count", "expert_feed_forward_length", "expert_shared_feed_forward_length",
        "expert_weights_norm", "expert_gating_func", "expert_shared_count", "expert_weights_scale"})
