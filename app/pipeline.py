"""What every endpoint is, and what the service hands it: one record, one plan, one build.

An explorer endpoint (app/answers/) and a lab experiment (app/lab/) are the same kind of record, an `Endpoint`:
its name, method, route, request and response models, summary, and `plan(context, request) -> Build`. The
service runs every one the same way (`Service.run`):

    1. what the endpoint `uses`: a text's lengths are checked first, then the model is resolved (or every model);
    2. `answer_key`: the one cache key; an identical earlier request is answered from the body cache;
    3. `plan(context, request)`: the checks against the model (a bad layer or too much work costs no forward pass),
       returning the `Build`;
    4. a text's tokens (a chat template rendered off the event loop), its interventions and shuffle;
    5. the build, given a `Run`, in one hop to the inference pool (`run.trace()`: the text's full forward pass,
       from the trace cache or computed once), rendered and cached.

Routes are made from the records (app/routers/__init__.py: add_routes).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from app.inference_pool import Engine, ForwardPass
from app.registry import Registry
from app.request_checks import Budget
from app.resolve import Resolved
from app.schemas import ERRORS
from app.tokenizing import Inputs
from model.edits import Interventions

# What the service prepares before the plan:
#   text          the request's model (or the default) and the text's tokens (checked lengths first)
#   model         the request's model (or the default)
#   chosen_model  the model the request names (by `model` or `config`), else none
#   every_model   every registered model
#   nothing       no model at all
Uses = Literal["text", "model", "chosen_model", "every_model", "nothing"]

# request fields that name the model: the resolved model's key stands for them in the cache key
MODEL_FIELDS = {"model", "config", "snapshot"}


@runtime_checkable
class NamesModel(Protocol):
    """A request that names a model by name only (no inline config, no snapshot): a query or a path."""

    @property
    def model(self) -> str | None: ...


@dataclass(frozen=True)
class Context:
    """What a plan is given: the model it uses, every model (every_model only), the limits and the server."""

    resolved: Resolved | None
    every_model: list[Resolved]
    budget: Budget
    device: str
    max_tokens: int  # the longest text (in tokens) the server reads or writes
    registry: Registry

    @property
    def model(self) -> Resolved:
        """The model of an endpoint that uses `text` or `model` (the service always resolves one)."""
        if self.resolved is None:
            raise RuntimeError("this endpoint was planned without a model")
        return self.resolved


@dataclass(frozen=True)
class Run:
    """What a build is given in the pool: the text's tokens, its model, the engine whose trace cache holds the
    text's forward pass, and the request's interventions (all None for an endpoint that reads no text)."""

    encoded: Inputs | None = None
    resolved: Resolved | None = None
    engine: Engine | None = None
    edits: Interventions | None = None

    @property
    def inputs(self) -> Inputs:
        """The text's tokens (and target tokens), as the forward pass reads them (after any shuffle)."""
        if self.encoded is None:
            raise RuntimeError("this endpoint reads no text")
        return self.encoded

    def trace(self) -> ForwardPass:
        """The full trace of the text, with the request's interventions: the trace cache's (shared by every
        endpoint that reads the same text), or computed now (once, however many ask at the same time)."""
        if self.encoded is None or self.resolved is None or self.engine is None:
            raise RuntimeError("this endpoint reads no text")
        return self.engine.trace_sync(self.resolved.key, self.resolved.model, self.encoded, self.edits)


Build = Callable[[Run], Any]  # the JSON answer (a dict, or a list for a catalogue)
RequestT = TypeVar("RequestT", bound=BaseModel)


@dataclass(frozen=True)
class Endpoint(Generic[RequestT]):
    """One endpoint: its route, its OpenAPI entry and its plan, all from this record.

    `name` is the route's name, so its OpenAPI operation id (`<name>_<path>_<method>`), and the first part of
    its cache key. `summary` is the route's description in the API docs.
    """

    name: str
    method: Literal["GET", "POST"]
    request: type[RequestT]  # the body (POST), or the query and path (GET)
    response: Any  # its response model (a pydantic model, or a list of one)
    summary: str
    plan: Callable[[Context, RequestT], Build]
    uses: Uses | Callable[[RequestT], Uses] = "text"
    measured: bool = False  # costs seconds (timings, training): the result is also kept apart from the body cache
    cached: bool | Callable[[RequestT], bool] = True  # False: every request is answered afresh (unseeded samples)
    # a cheap answer that reads no forward pass (tokens, a model's description): built on the event loop, not
    # queued behind traces in the pool, and never cached
    on_loop: bool = False
    route: str = ""  # its full path: /api/...
    tag: str = ""  # its group in the API docs
    responses: dict[int | str, dict[str, Any]] = field(default_factory=lambda: dict(ERRORS))

    def uses_for(self, request: RequestT) -> Uses:
        return self.uses(request) if callable(self.uses) else self.uses

    def cached_for(self, request: RequestT) -> bool:
        return not self.on_loop and (self.cached(request) if callable(self.cached) else self.cached)

    @property
    def route_name(self) -> str:
        """The route's name (and so its OpenAPI operation id): the endpoint's name."""
        return self.name


def answer_key(endpoint: Endpoint[Any], request: BaseModel, resolved: Resolved | None, every_model: list[Resolved],
               device: str) -> Hashable:
    """The one cache key of an answer: everything that decides it. The endpoint, the model (its key names a
    snapshot or an inline config too), every model for an endpoint that reads them all, the device (timings
    differ), and the request's other fields."""
    return (endpoint.name, resolved.key if resolved is not None else None, tuple(r.key for r in every_model),
            device, repr(request.model_dump(exclude=MODEL_FIELDS)))  # repr: any str
