"""/api/lab/*: the textbook's claims about attention, measured on random vectors and on real models.

One route per entry of the one list of experiments (app/lab/__init__.py: EXPERIMENTS), each parsed
by its request model and answered by one service call; GET /api/lab/experiments lists them for the page.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from app.lab import EXPERIMENTS
from app.lab.common import ExperimentOut
from app.routers import add_routes
from app.service import ServiceDep

router = APIRouter()


@router.get("/api/lab/experiments", response_model=list[ExperimentOut], tags=["lab"])
async def experiments(service: ServiceDep) -> Any:
    """Every lab experiment, in the page's order: name, panel, path, method and what it answers."""
    return service.lab_experiments()


add_routes(router, EXPERIMENTS)
