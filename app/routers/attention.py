"""POST /api/attention and POST /api/qkv: one layer's attention, step by step, for one head or all."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter

from app.deps import (
    EngineDep,
    RegistryDep,
    SettingsDep,
    answer_from_trace,
    check_heads,
    check_layer,
    stack_prefix,
    tokens_out,
)
from app.engine import TraceRun
from app.registry import Resolved
from app.schemas import ERRORS, AttentionOut, AttentionRequest, LayerRequest, QKVOut, QKVRequest
from app.tensors import encode_tensor
from model import readouts

router = APIRouter(prefix="/api", tags=["attention"])


class Selection:
    """Where one layer's attention lives in the trace, and which heads / tokens it involves."""

    def __init__(self, resolved: Resolved, run: TraceRun, body: LayerRequest) -> None:
        cfg = resolved.cfg
        prefix, self.stack = self.validate(resolved, body)
        self.heads = [body.head] if body.head is not None else list(range(cfg.n_heads))
        group = cfg.n_heads // cfg.kv_heads
        self.kv_heads = [h // group for h in self.heads]
        self.base = f"{prefix}blocks.{body.layer}.{'cross_attn' if body.cross else 'attn'}."
        self.rope = cfg.pos_encoding == "rope" and not body.cross
        # queries come from this stack's tokens; cross-attention keys are the encoder's (source) tokens
        stack_tokens = run.target_tokens if self.stack == "decoder" else run.tokens
        self.query_tokens = stack_tokens or run.tokens
        self.key_tokens = run.tokens if body.cross else self.query_tokens

    @staticmethod
    def validate(resolved: Resolved, body: LayerRequest) -> tuple[str, str | None]:
        """Check stack, layer and head before any work; (trace-name prefix, stack name)."""
        prefix, stack, n_layers = stack_prefix(resolved, body.stack, body.cross)
        check_layer(body.layer, n_layers)
        if body.head is not None:
            check_heads([body.head], resolved.cfg.n_heads)
        return prefix, stack

    def tensor(self, resolved: Resolved, run: TraceRun, body: LayerRequest, stage: str, label: str) -> dict[str, Any]:
        name = self.base + stage
        tensor = readouts.select_heads(run.trace[name], run.trace.dims[name], self.heads, resolved.cfg)
        encoded = encode_tensor(name, tensor, run.trace.dims[name], body.encoding, body.dtype)
        return {**encoded, "label": label}

    def header(self, resolved: Resolved, body: LayerRequest) -> dict[str, Any]:
        return {
            "model": resolved.name, "stack": self.stack, "layer": body.layer, "cross": body.cross,
            "heads": self.heads, "kv_heads": self.kv_heads,
            "query_tokens": tokens_out(self.query_tokens), "key_tokens": tokens_out(self.key_tokens),
        }


def build_attention(resolved: Resolved, run: TraceRun, body: AttentionRequest, sel: Selection) -> dict[str, Any]:
    q, k = ("hook_rot_q", "hook_rot_k") if sel.rope else ("hook_q", "hook_k")
    d_head = resolved.cfg.d_head
    return {
        **sel.header(resolved, body),
        "d_head": d_head, "scale": 1 / math.sqrt(d_head), "rope": sel.rope,
        "raw": sel.tensor(resolved, run, body, "hook_scores_raw", "Q·Kᵀ"),
        "scaled": sel.tensor(resolved, run, body, "hook_scores_scaled", "Q·Kᵀ / √d_head"),
        "masked": sel.tensor(resolved, run, body, "hook_attn_scores", "after the mask (null = hidden)"),
        "pattern": sel.tensor(resolved, run, body, "hook_pattern", "softmax"),
        "q": sel.tensor(resolved, run, body, q, "Q (rotated)" if sel.rope else "Q"),
        "k": sel.tensor(resolved, run, body, k, "K (rotated)" if sel.rope else "K"),
    }


@router.post("/attention", response_model=AttentionOut, responses=ERRORS)
async def attention(body: AttentionRequest, registry: RegistryDep, engine: EngineDep, settings: SettingsDep) -> Any:
    """Raw scores, scaled, masked and softmax matrices of one layer (one head or all), with the Q and K
    vectors behind each cell (rotated ones for RoPE) and the query / key token lists."""

    def prepare(resolved: Resolved) -> Callable[[TraceRun], Any]:
        Selection.validate(resolved, body)
        return lambda run: build_attention(resolved, run, body, Selection(resolved, run, body))

    return await answer_from_trace("attention", body, registry, engine, settings, prepare)


def build_qkv(resolved: Resolved, run: TraceRun, body: QKVRequest, sel: Selection) -> dict[str, Any]:
    stages = {"q": "hook_q", "k": "hook_k", "v": "hook_v"}
    if sel.rope:
        stages |= {"rot_q": "hook_rot_q", "rot_k": "hook_rot_k"}
    stages |= {"pattern": "hook_pattern", "z": "hook_z"}
    tensors = {key: sel.tensor(resolved, run, body, stage, key) for key, stage in stages.items()}
    return {**sel.header(resolved, body), "tensors": tensors}


@router.post("/qkv", response_model=QKVOut, responses=ERRORS)
async def qkv(body: QKVRequest, registry: RegistryDep, engine: EngineDep, settings: SettingsDep) -> Any:
    """Queries, keys and values of one layer (one head or all), the pattern, and z = pattern · V.

    With GQA, `k` and `v` hold the K/V heads the chosen query heads read (`kv_heads` maps them)."""

    def prepare(resolved: Resolved) -> Callable[[TraceRun], Any]:
        Selection.validate(resolved, body)
        return lambda run: build_qkv(resolved, run, body, Selection(resolved, run, body))

    return await answer_from_trace("qkv", body, registry, engine, settings, prepare)
