"""GET /api/positional-encoding: the position information each scheme adds, from model/positional.py."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from app.schemas import ERRORS, PositionalKindOut, PositionalOut, PositionalQuery
from app.service import ServiceDep

router = APIRouter(prefix="/api", tags=["positional"])


@router.get("/positional-encoding", response_model=PositionalOut, responses=ERRORS)
async def positional_encoding(query: Annotated[PositionalQuery, Query()], service: ServiceDep) -> Any:
    """Sinusoidal table [pos, d_model], a model's learned table, RoPE angles / cos / sin per pair and a
    rotated all-ones vector [pos, d_head], or ALiBi slopes and bias per head [head, q_pos, k_pos]."""
    return await service.positional_encoding(query)


@router.get("/positional-encoding/kinds", response_model=list[PositionalKindOut])
async def positional_kinds(service: ServiceDep) -> Any:
    """Every positional-encoding kind this server implements (the one registry, model/positional.py): what it
    changes (the token vectors, q and k, the scores, or nothing), whether it is a learned table, and whether
    it is defined past the longest training sequence."""
    return service.positional_kinds()
