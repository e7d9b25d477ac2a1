"""The weights of a mixture-of-experts layer (model/moe.py), as Hugging Face directories and GGUF files hold them,
split into one matrix per expert and matrix: `stack.blocks.L.mlp.experts.E.W_gate.weight` (and W_in, W_out), and
the router `stack.blocks.L.mlp.W_router.weight` [expert, d_model].

A GGUF file stores each layer's experts as one 3-D tensor per matrix (ffn_gate_exps, ffn_up_exps, ffn_down_exps:
[expert, rows, columns]; newer llama.cpp converters may merge the first two, gate rows first, as ffn_gate_up_exps).
Qwen3.5-MoE's shared expert is an FFN of its own (`mlp.shared_expert.W_gate.weight`, ...) and its gate
`mlp.W_shared_gate.weight` [1, d_model] (Hugging Face mlp.shared_expert.*, mlp.shared_expert_gate; GGUF
ffn_*_shexp, ffn_gate_inp_shexp). Kept in the file's precision (checkpoints/file_precision.py), each expert's
slice stays a memory-mapped stored weight: a pass dequantizes an expert only when a token is routed to it.
"""

from __future__ import annotations

import torch

from checkpoints.base import CheckpointError, StateDict
from checkpoints.gguf_tensors import ModelTensors, Shapes
from checkpoints.hf_common import take
from model.config import TransformerConfig
from model.stored_weights import StoredWeight

# Hugging Face per-expert names -> ours (what save_pretrained writes and the Hub's Qwen3-MoE files hold)
EXPERT_PROJECTIONS = {"gate_proj": "W_gate", "up_proj": "W_in", "down_proj": "W_out"}
# GGUF 3-D expert tensors -> ours
GGUF_EXPERTS = {"ffn_gate_exps": "W_gate", "ffn_up_exps": "W_in", "ffn_down_exps": "W_out"}
# GGUF shared-expert tensors -> ours
SHARED_EXPERT = {"ffn_gate_shexp": "W_gate", "ffn_up_shexp": "W_in", "ffn_down_shexp": "W_out"}


def per_expert(tensor: torch.Tensor) -> list[torch.Tensor]:
    """[expert, rows, columns] -> one [rows, columns] matrix per expert; a stored weight stays stored (a slice of
    its file's blocks), so no expert is dequantized here."""
    if isinstance(tensor, StoredWeight):
        return [tensor.part(index) for index in range(tensor.shape[0])]
    return list(tensor.unbind(0))


def hf_experts(state: StateDict, hf: str, ours: str, cfg: TransformerConfig) -> StateDict:
    """One layer's router and experts (hf: "layers.3.", ours: "stack.blocks.3."): per expert
    (mlp.experts.E.gate_proj.weight, ...) or fused as transformers 5 holds them in memory
    (mlp.experts.gate_up_proj [expert, 2·d_expert, d_model], gate rows first; mlp.experts.down_proj)."""
    out: StateDict = {ours + "mlp.W_router.weight": take(state, hf + "mlp.gate.weight")}
    n = cfg.n_experts
    fused = hf + "mlp.experts.gate_up_proj"
    if fused in state:
        gate_up, down = state[fused], take(state, hf + "mlp.experts.down_proj")
        return out | split_fused(gate_up, down, cfg, ours + "mlp.", hf + "mlp.experts.")
    for expert in range(n):
        for hf_name, our_name in EXPERT_PROJECTIONS.items():
            out[f"{ours}mlp.experts.{expert}.{our_name}.weight"] = take(
                state, f"{hf}mlp.experts.{expert}.{hf_name}.weight")
    return out


def split_fused(gate_up: torch.Tensor, down: torch.Tensor, cfg: TransformerConfig, ours: str,
                hf: str) -> StateDict:
    """transformers' fused experts (gate_up_proj [expert, 2·width, d_model], gate rows first; down_proj
    [expert, d_model, width]) -> ours (ours: "stack.blocks.3.mlp."), each shape checked; a weight kept in its
    file's precision stays stored, one expert's slice each."""
    n, width, d = cfg.n_experts, cfg.expert_width, cfg.d_model
    for name, tensor, shape in (("gate_up_proj", gate_up, (n, 2 * width, d)), ("down_proj", down, (n, d, width))):
        if tuple(tensor.shape) != shape:
            raise CheckpointError(f"weight {hf}{name!r} has shape {list(tensor.shape)}, but {n} experts of width "
                                  f"{width} (moe_intermediate_size) and hidden_size {d} make it {list(shape)}")
    out: StateDict = {}
    for expert, (both, back) in enumerate(zip(per_expert(gate_up), per_expert(down), strict=True)):
        gate, up = both.split(width)  # [2·width, d_model]: gate rows, then up rows
        out |= {f"{ours}experts.{expert}.W_gate.weight": gate, f"{ours}experts.{expert}.W_in.weight": up,
                f"{ours}experts.{expert}.W_out.weight": back}
    return out


def gguf_experts(source: ModelTensors, blk: str, ours: str, cfg: TransformerConfig) -> StateDict:
    """One layer's router (ffn_gate_inp) and experts (the three 3-D tensors, or gate and up merged, split per
    expert; a stored expert's gate and up rows stay stored)."""
    out: StateDict = {ours + "mlp.W_router.weight": source.get(blk + "ffn_gate_inp.weight")}
    names = dict(GGUF_EXPERTS)
    if source.has(blk + "ffn_gate_up_exps.weight"):
        width = cfg.expert_width
        for expert, matrix in enumerate(per_expert(source.get(blk + "ffn_gate_up_exps.weight"))):
            gate, up = matrix.split(width)  # [2·width, d_model]: gate rows, then up rows
            out[f"{ours}mlp.experts.{expert}.W_gate.weight"], out[f"{ours}mlp.experts.{expert}.W_in.weight"] = gate, up
        names = {"ffn_down_exps": "W_out"}
    for gguf_name, our_name in names.items():
        for expert, matrix in enumerate(per_expert(source.get(f"{blk}{gguf_name}.weight"))):
            out[f"{ours}mlp.experts.{expert}.{our_name}.weight"] = matrix
    return out


def hf_shared_expert(state: StateDict, hf: str, ours: str) -> StateDict:
    """Qwen3.5-MoE's shared expert and its gate, one layer's (hf: "layers.3.", ours: "stack.blocks.3.")."""
    out: StateDict = {f"{ours}mlp.shared_expert.{our_name}.weight": take(
        state, f"{hf}mlp.shared_expert.{hf_name}.weight") for hf_name, our_name in EXPERT_PROJECTIONS.items()}
    return out | {ours + "mlp.W_shared_gate.weight": take(state, hf + "mlp.shared_expert_gate.weight")}


def gguf_shared_expert(source: ModelTensors, blk: str, ours: str) -> StateDict:
    """qwen35moe's shared expert (ffn_gate_shexp, ffn_up_shexp, ffn_down_shexp) and its gate (ffn_gate_inp_shexp)."""
    out: StateDict = {f"{ours}mlp.shared_expert.{our_name}.weight": source.get(f"{blk}{gguf_name}.weight")
                      for gguf_name, our_name in SHARED_EXPERT.items()}
    return out | {ours + "mlp.W_shared_gate.weight": source.get(blk + "ffn_gate_inp_shexp.weight")}


def expert_shapes(cfg: TransformerConfig, shapes: Shapes) -> Shapes:
    """The router's and the experts' shapes (torch order), as the metadata fixes them."""
    n, width, d = cfg.n_experts, cfg.expert_width, cfg.d_model
    why = f"expert_count {n}, expert_feed_forward_length {width}, embedding_length {d}"
    out = shapes | {"ffn_gate_inp.weight": ((n, d), f"expert_count {n}, embedding_length {d}"),
                    "ffn_gate_exps.weight": ((n, width, d), why), "ffn_up_exps.weight": ((n, width, d), why),
                    "ffn_gate_up_exps.weight": ((n, 2 * width, d), why), "ffn_down_exps.weight": ((n, d, width), why)}
    if cfg.shared_expert_d_mlp is not None:  # Qwen3.5-MoE's shared expert and its gate (one number per token)
        shared = cfg.shared_expert_d_mlp
        why = f"expert_shared_feed_forward_length {shared}, embedding_length {d}"
        out |= {"ffn_gate_shexp.weight": ((shared, d), why), "ffn_up_shexp.weight": ((shared, d), why),
                "ffn_down_shexp.weight": ((d, shared), why),
                "ffn_gate_inp_shexp.weight": ((1, d), f"one gate per token, embedding_length {d}")}
    return out
