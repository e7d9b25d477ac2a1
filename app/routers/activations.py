"""POST /api/activations: norms (in, out, statistics), the FFN and the residual stream of a layer or all layers."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from app.schemas import ERRORS, ActivationsOut, ActivationsRequest
from app.service import ServiceDep

router = APIRouter(prefix="/api", tags=["activations"])


@router.post("/activations", response_model=ActivationsOut, responses=ERRORS)
async def activations(body: ActivationsRequest, service: ServiceDep) -> Any:
    """Norm input/output with its statistics (mean, scale), FFN pre/post (gate/up for SwiGLU), and the
    residual stream with per-position L2 norms, for one layer or (layer omitted) all layers."""
    return await service.activations(body)
