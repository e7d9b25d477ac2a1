"""GET /api/health: is the server up, on which device, with which models."""

from __future__ import annotations

import torch
from fastapi import APIRouter

from app.deps import RegistryDep
from app.schemas import HealthOut

router = APIRouter(prefix="/api", tags=["health"])


@router.get("/health", response_model=HealthOut)
def health(registry: RegistryDep) -> HealthOut:
    """Status, device, torch version, registered and loaded model names."""
    return HealthOut(status="ok", device=registry.device, torch=torch.__version__, models=registry.names(),
                     loaded=registry.loaded_names(), default=registry.default)
