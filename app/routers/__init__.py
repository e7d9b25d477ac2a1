"""One router per resource; every API route lives under /api.

Most routes are made from records (app/pipeline.py's `Endpoint`): `add_routes` gives each one handler that parses
its request (the body of a POST; the query of a GET, and its path's fields) and makes one service call,
`Service.run(endpoint, request)`; its name, summary, tag and models come from the record.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Query
from pydantic import BaseModel

from app.pipeline import Endpoint
from app.service import Service, ServiceDep


def add_routes(router: APIRouter, endpoints: Iterable[Endpoint[Any]]) -> None:
    for endpoint in endpoints:
        router.add_api_route(endpoint.route, handler(endpoint), methods=[endpoint.method], name=endpoint.route_name,
                             description=endpoint.summary, response_model=endpoint.response,
                             responses=endpoint.responses, tags=[endpoint.tag])


def handler(endpoint: Endpoint[Any]) -> Callable[..., Awaitable[Any]]:
    """The handler of one endpoint: its request, then one service call."""

    async def answer(request: BaseModel, service: Service) -> Any:
        return await service.run(endpoint, request)

    if endpoint.method == "POST":
        source: Any = Body()
    elif "{" in endpoint.route:  # its fields named in the path are the path's, the others the query's
        source = Depends(endpoint.request)
    else:
        source = Query()
    answer.__signature__ = inspect.Signature([  # type: ignore[attr-defined]  # what FastAPI reads
        inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                          annotation=Annotated[endpoint.request, source]),
        inspect.Parameter("service", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=ServiceDep),
    ])
    return answer
