"""POST /api/attention and /api/qkv: one layer's attention, step by step, for one head or all."""

from __future__ import annotations

import math
from typing import Any

import torch

from analysis import readouts
from app.answers import Builder
from app.inference_pool import TraceRun
from app.request_checks import Budget, attention_layer
from app.resolve import Resolved
from app.schemas import AttentionRequest, LayerRequest, QKVRequest
from app.tensors import encode_tensor
from app.tokenizing import tokens_out


class Selection:
    """Where one layer's attention lives in the trace, and which heads it involves (checked, no trace needed)."""

    def __init__(self, resolved: Resolved, request: LayerRequest) -> None:
        cfg = resolved.cfg
        asked = [request.head] if request.head is not None else []
        self.where = attention_layer(resolved, request.layer, request.stack, request.cross, asked)
        self.stack = self.where.stack
        self.resolved, self.request = resolved, request
        self.heads = asked or list(range(cfg.n_heads))
        group = cfg.n_heads // cfg.kv_heads
        self.kv_heads = [h // group for h in self.heads]
        self.rope = cfg.positional.where == "q_k" and not request.cross  # q and k are rotated (RoPE's family)

    def checked(self, run: TraceRun, stages: tuple[str, ...], budget: Budget) -> TraceRun:
        """The run, once the stages this answer will hold fit the budget."""
        budget.check(self.sliced(run, stage) for stage in stages)
        return run

    def sliced(self, run: TraceRun, stage: str) -> torch.Tensor:
        """One of the layer's stages ("pattern", "q", ...: model.hooks.ATTENTION_STAGES), its heads only."""
        name = self.where.stage(stage)
        return readouts.select_heads(run.trace[name], run.trace.dims[name], self.heads, self.resolved.cfg)

    def tensor(self, run: TraceRun, stage: str, label: str) -> dict[str, Any]:
        name = self.where.stage(stage)
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
    stages = ("scores_raw", "scores_scaled", "attn_scores", "pattern", "q", "k")
    return lambda run: build_attention(selection, selection.checked(run, stages, budget))


def build_attention(sel: Selection, run: TraceRun) -> dict[str, Any]:
    q, k = ("rot_q", "rot_k") if sel.rope else ("q", "k")
    cfg = sel.resolved.cfg
    d_head = cfg.d_head
    return {
        **sel.header(run),
        # Gemma divides by √query_pre_attn_scalar (score_scale_dim) instead of √d_head
        "d_head": d_head, "scale": 1 / math.sqrt(d_head if cfg.score_scale_dim is None else cfg.score_scale_dim),
        "rope": sel.rope,
        "raw": sel.tensor(run, "scores_raw", "Q·Kᵀ"),
        "scaled": sel.tensor(run, "scores_scaled", "Q·Kᵀ / √d_head"),
        "masked": sel.tensor(run, "attn_scores", "after the mask (null = hidden)"),
        "pattern": sel.tensor(run, "pattern", "softmax"),
        "q": sel.tensor(run, q, "Q (rotated)" if sel.rope else "Q"),
        "k": sel.tensor(run, k, "K (rotated)" if sel.rope else "K"),
    }


def plan_qkv(resolved: Resolved, request: QKVRequest, budget: Budget) -> Builder:
    selection = Selection(resolved, request)
    return lambda run: build_qkv(selection, selection.checked(run, qkv_stages(selection), budget))


def qkv_stages(sel: Selection) -> tuple[str, ...]:
    """The answer's tensors, each under its stage's name: q, k, v (+ rot_q, rot_k with RoPE), pattern, z."""
    return ("q", "k", "v", *(("rot_q", "rot_k") if sel.rope else ()), "pattern", "z")


def build_qkv(sel: Selection, run: TraceRun) -> dict[str, Any]:
    tensors = {stage: sel.tensor(run, stage, stage) for stage in qkv_stages(sel)}
    return {**sel.header(run), "tensors": tensors}
