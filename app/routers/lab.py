"""/api/lab/*: the textbook's claims about attention, measured on random vectors and on real models.

One route per entry of the one list of experiments (app/lab/__init__.py: EXPERIMENTS), each parsed
by its request model and answered by one service call; GET /api/lab/experiments lists them for the page.
A renamed experiment's old route (app/lab/__init__.py: RENAMED) still answers, marked deprecated.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import APIRouter, Body, Query
from pydantic import BaseModel

from app.lab import EXPERIMENTS, RENAMED, Experiment
from app.lab.common import ExperimentOut
from app.schemas import ERRORS
from app.service import Service, ServiceDep

router = APIRouter(prefix="/api/lab", tags=["lab"])


@router.get("/experiments", response_model=list[ExperimentOut])
async def experiments(service: ServiceDep) -> Any:
    """Every lab experiment, in the page's order: name, panel, path, method and what it answers."""
    return service.lab_experiments()


def route(experiment: Experiment[Any]) -> Callable[..., Awaitable[Any]]:
    """The handler of one experiment: its request (the body, or the query of a GET), then one service call."""

    async def handler(request: BaseModel, service: Service) -> Any:
        return await service.lab(experiment, request)

    source = Query() if experiment.method == "GET" else Body()
    handler.__signature__ = inspect.Signature([  # type: ignore[attr-defined]  # what FastAPI reads
        inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                          annotation=Annotated[experiment.request, source]),
        inspect.Parameter("service", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=ServiceDep),
    ])
    return handler


for _experiment in EXPERIMENTS:
    router.add_api_route(_experiment.path, route(_experiment), methods=[_experiment.method],
                         name=_experiment.route_name, description=_experiment.summary,
                         response_model=_experiment.response, responses=ERRORS)

# a renamed experiment's old route answers as the experiment does (its old path and operation id, deprecated)
for _old, _experiment in RENAMED.items():
    router.add_api_route("/" + _old.replace("_", "-"), route(_experiment), methods=[_experiment.method],
                         name=_old, deprecated=True,
                         description=f"Deprecated: the old path of {_experiment.route}, which answers the same.\n\n"
                                     + _experiment.summary,
                         response_model=_experiment.response, responses=ERRORS)
