"""GET /api/positional-encoding: the position information each scheme adds, from model/positional.py."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from app.schemas import ERRORS, PositionalOut, PositionalQuery
from app.service import ServiceDep

router = APIRouter(prefix="/api", tags=["positional"])


@router.get("/positional-encoding", response_model=PositionalOut, responses=ERRORS)
async def positional_encoding(query: Annotated[PositionalQuery, Query()], service: ServiceDep) -> Any:
    """Sinusoidal table [pos, d_model], a model's learned table, RoPE angles / cos / sin per pair and a
    rotated all-ones vector [pos, d_head], or ALiBi slopes and bias per head [head, q_pos, k_pos]."""
    return await service.positional_encoding(query)
