"""The one object between HTTP and the model.

A router parses the request and makes one call here. The service checks the text's length,
resolves the model, answers a repeated request from the body cache, tokenizes, runs or
fetches the trace (cache + single-flight, in the inference pool) and slices the answer.
Every lab experiment (app/lab/) goes through one method, `lab`.

    router -> Service -> resolve (which model) -> tokenizing (tokens) -> inference_pool (trace) -> model
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Hashable
from typing import Annotated, Any, TypeVar

import torch
from fastapi import Depends, Request
from pydantic import BaseModel
from starlette.responses import Response

from app import errors, lessons, process_tuning
from app.answers import Builder, activations, attention, lesson_claims, models, positional, predict, trace
from app.cache import LRU
from app.compression import ApiJSONResponse
from app.inference_pool import Engine
from app.lab import EXPERIMENTS
from app.lab.common import Experiment, LabContext, LabRun, Uses
from app.registry import Registry
from app.request_checks import Budget, interventions_for, shuffled
from app.resolve import ModelResolver, Resolved, count_parameters
from app.schemas import (
    ActivationsRequest,
    AttentionRequest,
    HealthOut,
    Intervenable,
    LoadingModel,
    ModelChoice,
    PositionalQuery,
    PredictRequest,
    QKVRequest,
    RefusedModel,
    TextInput,
    TokenizeRequest,
    TraceRequest,
)
from app.settings import Settings
from app.tokenizing import Inputs, check_lengths, encode
from model.config import TransformerConfig

R = TypeVar("R", bound=Intervenable)


def body_key(endpoint: str, resolved: Resolved, request: TextInput) -> Hashable:
    """Everything that decides a deterministic answer: endpoint, model, and the request's fields."""
    return endpoint, resolved.key, repr(request.model_dump(exclude={"model", "config"}))  # repr: any str


class Service:
    def __init__(self, registry: Registry, settings: Settings) -> None:
        self.registry = registry
        self.settings = settings
        self.engine = Engine(settings.workers, settings.queue_size, settings.trace_cache_entries,
                             settings.trace_cache_mb << 20)
        self.models = ModelResolver(registry, self.engine, settings)
        self.budget = Budget(settings.max_response_cells)
        self.measured: LRU[dict[str, Any]] = LRU(64)  # lab results that cost seconds: timings, trainings
        # a text's tokens, for the steps after its first view (each one asks about the same text): tokenizing
        # costs ~0.4 ms of the event loop's time; at most 256 x max_tokens tokens are kept
        self.tokenized: LRU[Inputs] = LRU(256)

    def prepare(self) -> None:
        """Before the server accepts requests: pre-touch the heap the trace cache will use (0.1-0.3 s), then pay
        the one-off cost of the first model built on the meta device (about 1.5 s, mostly an import that holds
        the interpreter lock in bursts of up to 0.13 s) here, rather than in the first from-scratch request or
        while a class's first requests queue behind it."""
        process_tuning.prefault_heap(self.settings.prefault_mb)
        count_parameters(TransformerConfig(d_model=8, n_layers=1, n_heads=1, vocab_size=8, n_ctx=8))

    def warm_up(self) -> None:
        """In the background after startup: load lazy models (minilm, smollm2), so their first use does not wait
        long; then give the loading's freed buffers back to the OS (dequantizing smollm2's GGUF file passes
        through copies of its weights that the tuned allocator would otherwise keep)."""
        self.registry.warm_up()
        process_tuning.release_freed_memory()

    def shutdown(self) -> None:
        self.engine.shutdown()

    # ------------------------------------------------------------ what the server offers

    def health(self) -> HealthOut:
        registry = self.registry
        health = HealthOut(status="ok", device=registry.device, torch=torch.__version__, models=registry.names(),
                           loaded=registry.loaded_names(), default=registry.default,
                           refused=[RefusedModel(**r.to_dict()) for r in registry.refusals()])
        loading = registry.loading()
        if loading:
            health.loading = [LoadingModel(name=name, done=done, total=total, percent=int(100 * done / max(1, total)))
                              for name, done, total in loading]
        return health

    async def list_models(self) -> Response:
        """Every model offered, described. A lazy model whose first load fails here is left out: from then on it is
        listed, with its reason, among GET /api/health's `refused`."""
        described = [models.describe(resolved, self.registry) for resolved in await self._every_model()]
        return ApiJSONResponse(models.in_menu_order(described))

    async def _every_model(self) -> list[Resolved]:
        """Every offered model, loaded; one whose first load fails now is skipped (it is refused from then on), and so
        is one still loading after the wait (GET /api/health lists it with its progress)."""
        every = []
        for name in self.registry.names():
            entry = self.registry.entries[name]
            if entry.large and entry.progress is not None:
                continue  # a large one loading now: in GET /api/health's `loading`, with how far, not waited for
            try:
                every.append(await self.models.named(name))
            except errors.ApiError as error:
                if error.code not in ("model_refused", "model_loading"):  # a loading one is in health's `loading`
                    raise
        return every

    async def model_info(self, name: str) -> Response:
        return ApiJSONResponse(models.describe(await self.models.named(name), self.registry))

    def positional_kinds(self) -> list[dict[str, object]]:
        return positional.kinds()

    async def positional_encoding(self, query: PositionalQuery) -> Response:
        resolved = await self.models.named(query.model) if query.model is not None else None
        return await self.engine.respond(None, positional.plan(query, resolved))

    # ------------------------------------------------------------ reading a text's forward pass

    async def tokenize(self, request: TokenizeRequest) -> Response:
        check_lengths(request, self.settings)
        resolved = await self.models.resolve(request)
        return ApiJSONResponse(trace.tokenized(resolved, await self._tokens(resolved, request)))

    async def trace(self, request: TraceRequest) -> Response:
        return await self._answer("trace", request, trace.plan)

    async def attention(self, request: AttentionRequest) -> Response:
        return await self._answer("attention", request, attention.plan_attention)

    async def qkv(self, request: QKVRequest) -> Response:
        return await self._answer("qkv", request, attention.plan_qkv)

    async def activations(self, request: ActivationsRequest) -> Response:
        return await self._answer("activations", request, activations.plan)

    async def predict(self, request: PredictRequest) -> Response:
        seed = request.seed if request.seed is not None else secrets.randbelow(2**31)
        max_tokens = self.settings.max_tokens

        def plan(resolved: Resolved, body: PredictRequest, _: Budget) -> Builder:  # a few hundred numbers at most
            return predict.plan(resolved, body, seed, min(max_tokens, resolved.cfg.n_ctx))

        # an unseeded request wants fresh samples: its answer is never cached
        return await self._answer("predict", request, plan, cache=request.seed is not None)

    # ------------------------------------------------------------ the lesson path

    def lessons(self) -> Response:
        return ApiJSONResponse(lessons.for_page())

    async def lesson_claims(self, chapter_id: str, lang: str) -> Response:
        """What a chapter asks the class to look at, measured on its view in `lang` (app/answers/lesson_claims.py)."""
        found = lessons.find(chapter_id)
        if found is None:
            raise errors.unknown_chapter([c.id for c in lessons.chapters()])
        number, chapter = found
        view = chapter.in_lang(lang)
        if view.model not in self.registry.names():
            raise errors.chapter_model_missing(chapter.id, view.model)
        resolved = await self.models.named(view.model)
        key = ("lesson_claims", chapter.id, lang, resolved.key)
        cached = self.engine.cached_body(key)
        if cached is not None:
            return cached
        build = lesson_claims.plan(resolved, number, chapter, lang)
        request = TextInput.model_validate({"model": view.model, "text": view.text, "target_text": view.target})
        inputs = await self._tokens(resolved, request)
        return await self.engine.answer(key, resolved.key, resolved.model, inputs, None, build)

    # ------------------------------------------------------------ the lab: every experiment, one way

    def lab_experiments(self) -> Response:
        return ApiJSONResponse([experiment.describe() for experiment in EXPERIMENTS])

    async def lab(self, experiment: Experiment[Any], request: BaseModel) -> Response:
        """Any lab experiment (app/lab/): what it uses (a text, a model, every model or nothing), the body cache,
        its plan (the checks: a bad layer or too much work costs nothing) and its build, in one hop to the pool."""
        uses = experiment.uses_for(request)
        resolved = await self._lab_model(uses, request)
        every = await self._every_model() if uses == "every_model" else []
        device = self.registry.device
        key = ("lab", experiment.name, resolved.key if resolved else None, tuple(r.key for r in every), device,
               repr(request.model_dump(exclude={"model", "config", "snapshot"})))  # repr: any str
        cached = self.engine.cached_body(key)
        if cached is not None:
            return cached
        build = experiment.plan(LabContext(resolved, every, self.budget, device), request)
        run = LabRun()
        if uses == "text" and resolved is not None and isinstance(request, TextInput):
            run = LabRun(await self._tokens(resolved, request), resolved, self.engine)
        if experiment.measured:
            return await self.engine.render(key, lambda: self._measured(key, lambda: build(run)))
        return await self.engine.render(key, lambda: build(run))

    async def _lab_model(self, uses: Uses, request: BaseModel) -> Resolved | None:
        """The model an experiment uses; a text's lengths are checked first (before any model is built or loaded)."""
        if not isinstance(request, ModelChoice) or uses in ("every_model", "nothing"):
            return None
        if uses == "text" and isinstance(request, TextInput):
            check_lengths(request, self.settings)
        if uses == "chosen_model" and request.model is None and request.config is None:
            return None
        return await self.models.resolve(request)

    def _measured(self, key: Hashable, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """Work that costs seconds (timings, training): its result kept in the service's LRU, computed once."""
        found = self.measured.get(key)
        return found if found is not None else self.measured.put(key, compute())

    async def _tokens(self, resolved: Resolved, request: TextInput) -> Inputs:
        """The request's tokens within the limits (app.tokenizing.encode), kept for the next request on that text.
        A chat request may render the model's chat template (a child process, up to seconds): off the loop."""
        key = (resolved.key, request.text, request.target_text, request.chat)
        inputs = self.tokenized.get(key)
        if inputs is None:
            if request.chat:
                inputs = await self.engine.call(encode, resolved.loaded, request, self.settings)  # bounded pool
            else:
                inputs = encode(resolved.loaded, request, self.settings)
            self.tokenized.put(key, inputs)
        return inputs

    async def _admit(self, endpoint: str, request: TextInput,
                     cache: bool = True) -> tuple[Resolved, Hashable | None, Response | None]:
        """The first steps of every request about a text: the cheap length checks (before any model is built
        or loaded), the model, the cache key, and the rendered answer to an identical earlier request."""
        check_lengths(request, self.settings)
        resolved = await self.models.resolve(request)
        key = body_key(endpoint, resolved, request) if cache else None
        return resolved, key, self.engine.cached_body(key)

    async def _answer(self, endpoint: str, request: R, plan: Callable[[Resolved, R, Budget], Builder],
                      cache: bool = True) -> Response:
        """The path of every endpoint that reads a trace.

        Pick the model; answer an identical earlier request from the rendered-body cache; else
        check the request against the model (a bad layer costs no forward pass), tokenize,
        trace (or reuse the cached trace) and build the answer, in one hop to the pool.
        """
        resolved, key, cached = await self._admit(endpoint, request, cache)
        if cached is not None:
            return cached
        build = plan(resolved, request, self.budget)
        edits = interventions_for(resolved, request.interventions)
        inputs = shuffled(await self._tokens(resolved, request), request.interventions)
        return await self.engine.answer(key, resolved.key, resolved.model, inputs, edits, build)


async def get_service(request: Request) -> Service:
    """The app's one Service. async: FastAPI runs a plain-def dependency in a worker thread, a hop per request."""
    service: Service = request.app.state.service
    return service


ServiceDep = Annotated[Service, Depends(get_service)]
__all__ = ["Service", "ServiceDep", "get_service"]
