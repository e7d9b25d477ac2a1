"""POST /api/attention and POST /api/qkv: one layer's attention, step by step, for one head or all."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from app.schemas import ERRORS, AttentionOut, AttentionRequest, QKVOut, QKVRequest
from app.service import ServiceDep

router = APIRouter(prefix="/api", tags=["attention"])


@router.post("/attention", response_model=AttentionOut, responses=ERRORS)
async def attention(body: AttentionRequest, service: ServiceDep) -> Any:
    """Raw scores, scaled, masked and softmax matrices of one layer (one head or all), with the Q and K
    vectors behind each cell (rotated ones for RoPE) and the query / key token lists."""
    return await service.attention(body)


@router.post("/qkv", response_model=QKVOut, responses=ERRORS)
async def qkv(body: QKVRequest, service: ServiceDep) -> Any:
    """Queries, keys and values of one layer (one head or all), the pattern, and z = pattern · V.

    With GQA, `k` and `v` hold the K/V heads the chosen query heads read (`kv_heads` maps them)."""
    return await service.qkv(body)
