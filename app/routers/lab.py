"""/api/lab/*: the textbook's claims about attention, measured on random vectors and on real models.

One route per entry of the one list of experiments (app/lab/__init__.py: EXPERIMENTS), each parsed
by its request model and answered by one service call; GET /api/lab/experiments lists them for the page.
A renamed experiment's old route (app/lab/__init__.py: RENAMED) still answers, marked deprecated.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from app.lab import EXPERIMENTS, RENAMED
from app.lab.common import ExperimentOut
from app.routers import add_routes, handler
from app.service import ServiceDep

router = APIRouter()


@router.get("/api/lab/experiments", response_model=list[ExperimentOut], tags=["lab"])
async def experiments(service: ServiceDep) -> Any:
    """Every lab experiment, in the page's order: name, panel, path, method and what it answers."""
    return service.lab_experiments()


add_routes(router, EXPERIMENTS)

# a renamed experiment's old route answers as the experiment does (its old path and operation id, deprecated)
for _old, _experiment in RENAMED.items():
    router.add_api_route("/api/lab/" + _old.replace("_", "-"), handler(_experiment), methods=[_experiment.method],
                         name=_old, deprecated=True, tags=[_experiment.tag],
                         description=f"Deprecated: the old path of {_experiment.route}, which answers the same.\n\n"
                                     + _experiment.summary,
                         response_model=_experiment.response, responses=_experiment.responses)
