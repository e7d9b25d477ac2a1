"""What every lab experiment has: its entry in the one list (app/lab/__init__.py), and what the service hands it.

Each app/lab/<experiment>.py holds its request and response models, its checks and its build, and
ends with `EXPERIMENT = Experiment(...)`. The service runs every experiment the same way
(Service.lab): it resolves what the experiment `uses`, answers a repeated request from the body
cache, calls `plan(context, request)` (the checks: too much work or a bad layer costs nothing),
then runs the returned build in the inference pool with a `LabRun`. The numbers come from lab/
and analysis/; the modules here check, pick, round and serialize. The checks they share with the
explorer (stack, layer, heads, a model that writes text, the work budget) are app/request_checks.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, Field

from app.inference_pool import Engine, TraceRun
from app.request_checks import Budget
from app.resolve import Resolved
from app.schemas import Bool, Int, StackName, TextInput
from app.tokenizing import Inputs


class AttentionLayerInput(TextInput):
    """One attention layer of the text's trace (experiments that read a layer's q, k, v)."""

    layer: Int = Field(0, ge=0, le=1024, description="The layer, from 0 (a 422 names the model's own range).")
    stack: StackName | None = Field(None, description="Encoder-decoder only: 'encoder' (default) or 'decoder'.")
    cross: Bool = Field(False, description="The decoder's cross-attention (encoder-decoder only).")


class AttentionHeadInput(AttentionLayerInput):
    """One head of one attention layer."""

    head: Int = Field(0, ge=0, le=1024, description="The query head, from 0 (a 422 names the model's own range).")


# What the service prepares before the plan:
#   text          the request's model (or the default) and the text's tokens (checked lengths first)
#   model         the request's model (or the default)
#   chosen_model  the model the request names (by `model` or `config`), else none
#   every_model   every registered model
#   nothing       no model at all
Uses = Literal["text", "model", "chosen_model", "every_model", "nothing"]


@dataclass(frozen=True)
class LabContext:
    """What an experiment's plan is given: the model it uses, every model (every_model only), the limits."""

    resolved: Resolved | None
    every_model: list[Resolved]
    budget: Budget
    device: str

    @property
    def model(self) -> Resolved:
        """The model of an experiment that uses `text` or `model` (the service always resolves one)."""
        if self.resolved is None:
            raise RuntimeError("this experiment was planned without a model")
        return self.resolved


@dataclass(frozen=True)
class LabRun:
    """What a build is given in the pool: the text's tokens, its model, and the engine whose trace cache
    holds the plain traced run of them (all None for an experiment that reads no text)."""

    inputs: Inputs | None = None
    resolved: Resolved | None = None
    engine: Engine | None = None

    @property
    def tokens(self) -> Inputs:
        if self.inputs is None:
            raise RuntimeError("this experiment reads no text")
        return self.inputs

    def trace(self) -> TraceRun:
        """The full trace of the text: the trace cache's, shared with the explorer's views of the same text,
        or computed now (once, however many ask at the same time)."""
        if self.inputs is None or self.resolved is None or self.engine is None:
            raise RuntimeError("this experiment reads no text")
        return self.engine.trace_sync(self.resolved.key, self.resolved.model, self.inputs)


Build = Callable[[LabRun], dict[str, Any]]
RequestT = TypeVar("RequestT", bound=BaseModel)


@dataclass(frozen=True)
class Experiment(Generic[RequestT]):
    """One lab experiment: one route, one panel, one plan."""

    name: str  # its modules: app/lab/<name>.py, and lab/<name>.py (or analysis/) for the numbers
    path: str  # under /api/lab
    method: Literal["GET", "POST"]
    request: type[RequestT]  # the body (POST) or the query (GET)
    response: type[BaseModel]
    panel: str  # the lab page's panel that shows it: static/js/lab/panels/<panel>.js
    summary: str  # what it answers (the API docs' description of the route)
    plan: Callable[[LabContext, RequestT], Build]
    uses: Uses | Callable[[RequestT], Uses] = "text"
    measured: bool = False  # costs seconds (timings, training): the result is also kept apart from the body cache

    @property
    def route(self) -> str:
        return f"/api/lab{self.path}"

    @property
    def route_name(self) -> str:
        """The route's name (and so its OpenAPI operation id): the path's words, `kv_cache`, `logit_lens`."""
        return self.path.strip("/").replace("-", "_")

    def uses_for(self, request: RequestT) -> Uses:
        return self.uses(request) if callable(self.uses) else self.uses

    def describe(self) -> dict[str, str]:  # ExperimentOut
        """Its entry in GET /api/lab/experiments (what the page's script reads)."""
        return {"name": self.name, "panel": self.panel, "path": self.route, "method": self.method,
                "summary": self.summary}


class ExperimentOut(BaseModel):
    """One entry of GET /api/lab/experiments."""

    name: str
    panel: str
    path: str
    method: str
    summary: str


def rounded(values: list[float], digits: int = 6) -> list[float]:
    return [round(v, digits) for v in values]
