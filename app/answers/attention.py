"""POST /api/attention and /api/qkv: one layer's attention, step by step, for one head or all."""

from __future__ import annotations

import math
from typing import Any

import torch

from analysis import readouts
from app.inference_pool import ForwardPass
from app.pipeline import Build, Context, Endpoint
from app.request_checks import Budget, attention_layer
from app.resolve import Resolved
from app.schemas import AttentionOut, AttentionRequest, LayerRequest, QKVOut, QKVRequest
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
        # q and k are rotated (RoPE's family), except in a NoPE layer (SmolLM3)
        self.rope = cfg.positional.where == "q_k" and not request.cross and cfg.has_positions(request.layer)

    def checked(self, forward: ForwardPass, stages: tuple[str, ...], budget: Budget) -> ForwardPass:
        """The forward pass, once the stages this answer will hold fit the budget."""
        budget.check(self.sliced(forward, stage) for stage in stages)
        return forward

    def sliced(self, forward: ForwardPass, stage: str) -> torch.Tensor:
        """One of the layer's stages ("pattern", "q", ...: model.hooks.ATTENTION_STAGES), its heads only."""
        name = self.where.stage(stage)
        return readouts.select_heads(forward.trace[name], forward.trace.dims[name], self.heads, self.resolved.cfg)

    def tensor(self, forward: ForwardPass, stage: str, label: str) -> dict[str, Any]:
        name = self.where.stage(stage)
        encoded = encode_tensor(name, self.sliced(forward, stage), forward.trace.dims[name], self.request.encoding,
                                self.request.dtype)
        return {**encoded, "label": label}

    def header(self, forward: ForwardPass) -> dict[str, Any]:
        # queries come from this stack's tokens; cross-attention keys are the encoder's (source) tokens
        stack_tokens = forward.target_tokens if self.stack == "decoder" else forward.tokens
        query_tokens = stack_tokens or forward.tokens
        key_tokens = forward.tokens if self.request.cross else query_tokens
        return {
            "model": self.resolved.name, "stack": self.stack, "layer": self.request.layer, "cross": self.request.cross,
            "heads": self.heads, "kv_heads": self.kv_heads,
            "query_tokens": tokens_out(query_tokens), "key_tokens": tokens_out(key_tokens),
        }


def plan_attention(context: Context, request: AttentionRequest) -> Build:
    selection = Selection(context.model, request)
    stages = ("scores_raw", "scores_scaled", "attn_scores", "pattern", "q", "k")
    return lambda run: build_attention(selection, selection.checked(run.trace(), stages, context.budget))


def build_attention(sel: Selection, forward: ForwardPass) -> dict[str, Any]:
    q, k = ("rot_q", "rot_k") if sel.rope else ("q", "k")
    cfg = sel.resolved.cfg
    d_head = cfg.d_head
    return {
        **sel.header(forward),
        # Gemma divides by √query_pre_attn_scalar (score_scale_dim) instead of √d_head
        "d_head": d_head, "scale": 1 / math.sqrt(d_head if cfg.score_scale_dim is None else cfg.score_scale_dim),
        "rope": sel.rope,
        "raw": sel.tensor(forward, "scores_raw", "Q·Kᵀ"),
        "scaled": sel.tensor(forward, "scores_scaled", "Q·Kᵀ / √d_head"),
        "masked": sel.tensor(forward, "attn_scores", "after the mask (null = hidden)"),
        "pattern": sel.tensor(forward, "pattern", "softmax"),
        "q": sel.tensor(forward, q, "Q (rotated)" if sel.rope else "Q"),
        "k": sel.tensor(forward, k, "K (rotated)" if sel.rope else "K"),
    }


def plan_qkv(context: Context, request: QKVRequest) -> Build:
    selection = Selection(context.model, request)
    return lambda run: build_qkv(selection, selection.checked(run.trace(), qkv_stages(selection), context.budget))


def qkv_stages(sel: Selection) -> tuple[str, ...]:
    """The answer's tensors, each under its stage's name: q, k, v (+ rot_q, rot_k with RoPE), pattern, z."""
    return ("q", "k", "v", *(("rot_q", "rot_k") if sel.rope else ()), "pattern", "z")


def build_qkv(sel: Selection, forward: ForwardPass) -> dict[str, Any]:
    tensors = {stage: sel.tensor(forward, stage, stage) for stage in qkv_stages(sel)}
    return {**sel.header(forward), "tensors": tensors}


ATTENTION = Endpoint(
    name="attention", method="POST", route="/api/attention", tag="attention", request=AttentionRequest,
    response=AttentionOut, plan=plan_attention,
    summary="Raw scores, scaled, masked and softmax matrices of one layer (one head or all), with the Q and K\n"
            "vectors behind each cell (rotated ones for RoPE) and the query / key token lists.")

QKV = Endpoint(
    name="qkv", method="POST", route="/api/qkv", tag="attention", request=QKVRequest, response=QKVOut, plan=plan_qkv,
    summary="Queries, keys and values of one layer (one head or all), the pattern, and z = pattern · V.\n\n"
            "With GQA, `k` and `v` hold the K/V heads the chosen query heads read (`kv_heads` maps them).")
