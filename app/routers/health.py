"""GET /api/health: is the server up, on which device, with which models."""

from __future__ import annotations

from fastapi import APIRouter

from app.schemas import HealthOut
from app.service import ServiceDep

router = APIRouter(prefix="/api", tags=["health"])


@router.get("/health", response_model=HealthOut, response_model_exclude_unset=True)  # `loading` only while one is
def health(service: ServiceDep) -> HealthOut:
    """Status, device, torch version, registered and loaded model names."""
    return service.health()
