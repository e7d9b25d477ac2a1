"""GET /api/models and /api/models/{name}: what each model is, its config, sizes and stage names."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from app.schemas import ERRORS, ModelChoice, ModelInfo, StageInfo
from app.service import ServiceDep

router = APIRouter(prefix="/api", tags=["models"])


@router.get("/models", response_model=list[ModelInfo])
async def list_models(service: ServiceDep) -> Any:
    """Every model this server offers (the default one has `default: true`)."""
    return await service.list_models()


@router.get("/models/{name}", response_model=ModelInfo, responses={404: ERRORS[404]})
async def get_model(name: str, service: ServiceDep) -> Any:
    """One model: config, parameter counts per component, every trace stage with its dims, and its meta."""
    return await service.model_info(name)


@router.post("/stages", response_model=list[StageInfo], responses=ERRORS)
async def model_stages(body: ModelChoice, service: ServiceDep) -> Any:
    """Every trace stage of a model with its place, step, panel and dims, as GET /api/models/{name} lists them:
    for a registered model, or a from-scratch `config` (random weights), which has no GET of its own."""
    return await service.model_stages(body)
