"""POST /api/attention and /api/qkv: one layer's attention, step by step, for one head or all."""

from __future__ import annotations

import math
from typing import Any

import torch

from analysis import readouts
from app.answers import Budget, Builder
from app.answers.request_checks import check_heads, check_layer, stack_prefix
from app.inference_pool import TraceRun
from app.resolve import Resolved
from app.schemas import AttentionRequest, LayerRequest, QKVRequest
from app.tensors import encode_tensor
from app.tokenizing import tokens_out


class Selection:
    """Where one layer's attention lives in the trace, and which heads it involves (checked, no trace needed)."""

    def __init__(self, resolved: Resolved, request: LayerRequest) -> None:
        cfg = resolved.cfg
        prefix, self.stack, n_layers = stack_prefix(resolved, request.stack, request.cross)
        check_layer(request.layer, n_layers)
        if request.head is not None:
            check_heads([request.head], cfg.n_heads)
        self.resolved, self.request = resolved, request
        self.heads = [request.head] if request.head is not None else list(range(cfg.n_heads))
        group = cfg.n_heads // cfg.kv_heads
        self.kv_heads = [h // group for h in self.heads]
        self.base = f"{prefix}blocks.{request.layer}.{'cross_attn' if request.cross else 'attn'}."
        self.rope = cfg.positional.where == "q_k" and not request.cross  # q and k are rotated (RoPE's family)

    def checked(self, run: TraceRun, stages: tuple[str, ...], budget: Budget) -> TraceRun:
        """The run, once the stages this answer will hold fit the budget."""
        budget.check(self.sliced(run, stage) for stage in stages)
        return run

    def sliced(self, run: TraceRun, stage: str) -> torch.Tensor:
        name = self.base + stage
        return readouts.select_heads(run.trace[name], run.trace.dims[name], self.heads, self.resolved.cfg)

    def tensor(self, run: TraceRun, stage: str, label: str) -> dict[str, Any]:
        name = self.base + stage
        encoded = encode_tensor(name, self.sliced(run, stage), run.trace.dims[name], self.request.encoding,
                                self.request.dtype)
        return {**encoded, "label": label}

    def header(self, run: TraceRun) -> dict[str, Any]:
        # queries come from this stack's tokens; cross-attention keys are the encoder's (source) tokens
        stack_tokens = run.target_tokens if self.stack == "decoder" else run.tokens
        query_tokens = stack_tokens or run.tokens
        key_tokens = run.tokens if self.request.cross else query_tokens
        return {
            "model": self.resolved.name, "stack": self.stack, "layer": self.request.layer, "cross": self.request.cross,
            "heads": self.heads, "kv_heads": self.kv_heads,
            "query_tokens": tokens_out(query_tokens), "key_tokens": tokens_out(key_tokens),
        }


def plan_attention(resolved: Resolved, request: AttentionRequest, budget: Budget) -> Builder:
    selection = Selection(resolved, request)
    stages = ("hook_scores_raw", "hook_scores_scaled", "hook_attn_scores", "hook_pattern", "hook_q", "hook_k")
    return lambda run: build_attention(selection, selection.checked(run, stages, budget))


def build_attention(sel: Selection, run: TraceRun) -> dict[str, Any]:
    q, k = ("hook_rot_q", "hook_rot_k") if sel.rope else ("hook_q", "hook_k")
    d_head = sel.resolved.cfg.d_head
    return {
        **sel.header(run),
        "d_head": d_head, "scale": 1 / math.sqrt(d_head), "rope": sel.rope,
        "raw": sel.tensor(run, "hook_scores_raw", "Q·Kᵀ"),
        "scaled": sel.tensor(run, "hook_scores_scaled", "Q·Kᵀ / √d_head"),
        "masked": sel.tensor(run, "hook_attn_scores", "after the mask (null = hidden)"),
        "pattern": sel.tensor(run, "hook_pattern", "softmax"),
        "q": sel.tensor(run, q, "Q (rotated)" if sel.rope else "Q"),
        "k": sel.tensor(run, k, "K (rotated)" if sel.rope else "K"),
    }


def plan_qkv(resolved: Resolved, request: QKVRequest, budget: Budget) -> Builder:
    selection = Selection(resolved, request)
    stages = tuple(qkv_stages(selection).values())
    return lambda run: build_qkv(selection, selection.checked(run, stages, budget))


def qkv_stages(sel: Selection) -> dict[str, str]:
    stages = {"q": "hook_q", "k": "hook_k", "v": "hook_v"}
    if sel.rope:
        stages |= {"rot_q": "hook_rot_q", "rot_k": "hook_rot_k"}
    return stages | {"pattern": "hook_pattern", "z": "hook_z"}


def build_qkv(sel: Selection, run: TraceRun) -> dict[str, Any]:
    tensors = {key: sel.tensor(run, stage, key) for key, stage in qkv_stages(sel).items()}
    return {**sel.header(run), "tensors": tensors}
