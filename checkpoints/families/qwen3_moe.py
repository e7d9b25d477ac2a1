"""Qwen3-MoE: Qwen3 (checkpoints/families/qwen3.py) with a mixture of experts in place of the FFN (model/moe.py).

    probs  = softmax(W_router · norm(h))                          [expert]
    chosen = top num_experts_per_tok of probs; weight = probs[chosen] (÷ their sum with norm_topk_prob)
    out    = h + Σ over chosen e of weight_e · W_out_e · (silu(W_gate_e · norm(h)) ⊙ W_in_e · norm(h))

Hugging Face `qwen3_moe` (Qwen3MoeForCausalLM): the experts in the layers (L + 1) % decoder_sparse_step == 0 not
in mlp_only_layers (the others keep one FFN of intermediate_size); num_experts (num_local_experts as transformers 5
writes it) of moe_intermediate_size each. No shared expert (Qwen3-MoE has none). Sliding windows are refused
(transformers' Qwen3-MoE has use_sliding_window, off in every released model).
GGUF `qwen3moe`: expert_count, expert_used_count, expert_feed_forward_length; every layer's FFN a mixture of
experts (ffn_gate_inp, ffn_gate_exps, ffn_up_exps, ffn_down_exps); llama.cpp always renormalises the chosen
weights (norm_topk_prob), and gates with a softmax.
Qwen3.5-MoE (`qwen3_5_moe`, GGUF `qwen35moe`), with gated DeltaNet layers and a shared expert, has records of its own
(checkpoints/families/qwen35_moe.py).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from checkpoints.base import CheckpointError, ConfigFields
from checkpoints.experts import expert_shapes
from checkpoints.families.llama import LLAMA_KEYS, records
from checkpoints.families.qwen3 import LAYOUT as QWEN3
from checkpoints.gguf_read import GgufRead

GATING_SOFTMAX = 1  # llama.cpp's LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX


def moe_fields(hf_config: dict[str, Any], loader: str, n_layers: int) -> dict[str, Any]:
    """The experts as transformers' Qwen3MoeDecoderLayer places them."""
    counts = {name: hf_config[name] for name in ("num_experts", "num_local_experts") if name in hf_config}
    if len(set(map(repr, counts.values()))) > 1:  # transformers 5 writes num_local_experts, the Hub num_experts
        raise CheckpointError(f"{loader}: config fields num_experts = {counts['num_experts']!r} and "
                              f"num_local_experts = {counts['num_local_experts']!r} disagree")
    n_experts = next(iter(counts.values()), 128)
    step, dense = hf_config.get("decoder_sparse_step", 1), hf_config.get("mlp_only_layers") or []
    if isinstance(step, bool) or not isinstance(step, int) or step < 1:
        raise CheckpointError(f"{loader}: config field decoder_sparse_step = {step!r} must be a whole number >= 1")
    if not isinstance(dense, list) or any(not isinstance(layer, int) for layer in dense):
        raise CheckpointError(f"{loader}: config field mlp_only_layers = {dense!r} must be a list of layers")
    if n_experts == 0:
        return {}
    moe = tuple(layer for layer in range(n_layers) if layer not in dense and (layer + 1) % step == 0)
    return {"n_experts": n_experts, "n_experts_used": hf_config.get("num_experts_per_tok", 8),
            "expert_d_mlp": hf_config.get("moe_intermediate_size", 768),
            "moe_layers": None if len(moe) == n_layers else moe,
            "expert_norm_topk": bool(hf_config.get("norm_topk_prob", False))}


def gguf_moe_fields(read: GgufRead) -> dict[str, Any]:
    """expert_count experts in every layer, expert_used_count chosen, renormalised (as llama.cpp's qwen3moe)."""
    for key, wanted in (("expert_weights_norm", True), ("expert_gating_func", GATING_SOFTMAX)):
        value = read.metadata.get(read.prefix + key, wanted)
        if value != wanted:
            raise CheckpointError(f"{read.prefix}{key} = {value!r} is not implemented: llama.cpp's qwen3moe "
                                  f"renormalises the chosen experts' softmax weights whatever it says")
    return {"n_experts": int(read.get("expert_count")), "n_experts_used": int(read.get("expert_used_count")),
            "expert_d_mlp": int(read.get("expert_feed_forward_length")), "expert_norm_topk": True}


LAYOUT = dataclasses.replace(QWEN3, hf_extra=moe_fields, gguf_extra=gguf_moe_fields)
HF_FIELDS = ConfigFields(
    frozenset({"attention_bias", "num_experts", "num_local_experts", "num_experts_per_tok", "moe_intermediate_size",
               "decoder_sparse_step", "mlp_only_layers", "norm_topk_prob"}),
    # the router's training loss and its output flag change no number of the forward pass; the window is read
    # only with use_sliding_window, which is refused
    frozenset({"router_aux_loss_coef", "output_router_logits", "sliding_window"}),
    {"use_sliding_window": False})
HF, _gguf = records("qwen3_moe", LAYOUT, HF_FIELDS, {"qwen2": "qwen2"})  # Qwen3's vocabulary
GGUF = dataclasses.replace(
    _gguf, arch="qwen3moe", shapes=expert_shapes,
    keys=LLAMA_KEYS | {"expert_count", "expert_used_count", "expert_feed_forward_length", "expert_weights_norm",
                       "expert_gating_func"})
