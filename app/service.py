"""The one object between HTTP and the models.

A router parses the request and makes one call here. Every endpoint, the explorer's and the lab's, is a record
(app/pipeline.py's `Endpoint`) answered by one method, `run`: it checks the text's length, resolves the model,
answers a repeated request from the body cache (one key: app.pipeline.answer_key), plans (the checks), tokenizes,
and builds the answer in one hop to the inference pool (where the trace is fetched or computed: cache +
single-flight).

    router -> Service.run -> resolve (which model) -> plan -> tokenizing (tokens) -> inference_pool (trace) -> model
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Annotated, Any

import torch
from fastapi import Depends, Request
from pydantic import BaseModel
from starlette.responses import Response

from app import errors, process_tuning
from app.answers import lesson_claims, lesson_questions
from app.cache import LRU
from app.compression import ApiJSONResponse
from app.inference_pool import Engine
from app.lab import EXPERIMENTS
from app.pipeline import Context, Endpoint, NamesModel, Run, Uses, answer_key
from app.registry import Registry
from app.request_checks import Budget, interventions_for, shuffled
from app.resolve import ModelResolver, Resolved, count_parameters
from app.schemas import HealthOut, Intervenable, LoadingModel, ModelChoice, RefusedModel, TextInput
from app.settings import Settings
from app.tokenizing import Inputs, check_lengths, encode
from lessons import chapters as lessons  # the lesson path (lessons/chapters.py)
from model.config import TransformerConfig


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

    def lessons(self) -> Response:
        return ApiJSONResponse(lessons.for_page())

    def lab_experiments(self) -> Response:
        return ApiJSONResponse([experiment.describe() for experiment in EXPERIMENTS])

    async def lesson_claims(self, chapter_id: str, lang: str, screen: dict[str, Any] | None = None) -> Response:
        """What a chapter asks the class to look at, measured on its view in `lang` (app/answers/lesson_claims.py),
        or on the view on screen (`screen`: text, target_text, model, layer, head): as a request about its text,
        answered as every endpoint is."""
        request = lesson_claims.view_request(chapter_id, lang, self.registry.names(), screen)
        return await self.run(lesson_claims.LESSON_CLAIMS, request)

    async def lesson_questions(self, chapter_id: str, lang: str, screen: dict[str, Any] | None = None,
                               question: str | None = None, answer: str | None = None) -> Response:
        """What a chapter asks the class to predict, answered on its view in `lang` or on the view on screen
        (app/answers/lesson_questions.py); with `question` and `answer`, that answer checked."""
        view = lesson_claims.view_request(chapter_id, lang, self.registry.names(), screen)
        request = lesson_questions.questions_request(view, question, answer)
        return await self.run(lesson_questions.LESSON_QUESTIONS, request)

    # ------------------------------------------------------------ every endpoint, one way

    async def run(self, endpoint: Endpoint[Any], request: BaseModel) -> Response:
        """Any endpoint (app/pipeline.py): what it uses (a text, a model, every model or nothing), the body cache,
        its plan (the checks: a bad layer or too much work costs nothing) and its build, in one hop to the pool."""
        uses = endpoint.uses_for(request)
        resolved = await self._model(uses, request)
        every = await self._every_model() if uses == "every_model" else []
        device = self.registry.device
        key = answer_key(endpoint, request, resolved, every, device) if endpoint.cached_for(request) else None
        cached = self.engine.cached_body(key)
        if cached is not None:
            return cached
        context = Context(resolved, every, self.budget, device, self.settings.max_tokens, self.registry)
        build = endpoint.plan(context, request)
        run = await self._run(uses, resolved, request)
        if endpoint.on_loop:
            return ApiJSONResponse(build(run))
        if endpoint.measured and key is not None:
            return await self.engine.render(key, lambda: self._measured(key, lambda: build(run)))
        return await self.engine.render(key, lambda: build(run))

    async def _model(self, uses: Uses, request: BaseModel) -> Resolved | None:
        """The model an endpoint uses; a text's lengths are checked first (before any model is built or loaded)."""
        if uses in ("every_model", "nothing"):
            return None
        if uses == "text" and isinstance(request, TextInput):
            check_lengths(request, self.settings)
        if isinstance(request, ModelChoice):
            if uses == "chosen_model" and request.model is None and request.config is None:
                return None
            return await self.models.resolve(request)
        if isinstance(request, NamesModel):  # a name alone (a query's or a path's)
            if uses == "chosen_model" and request.model is None:
                return None
            return await self.models.named(request.model)
        return None

    async def _run(self, uses: Uses, resolved: Resolved | None, request: BaseModel) -> Run:
        """What the build is given: for a text, its tokens (shuffled and with the interventions' edits, if asked)."""
        if uses != "text" or resolved is None or not isinstance(request, TextInput):
            return Run()
        if not isinstance(request, Intervenable):
            return Run(await self._tokens(resolved, request), resolved, self.engine)
        edits = interventions_for(resolved, request.interventions)  # checked before the text is tokenized
        inputs = shuffled(await self._tokens(resolved, request), request.interventions)
        return Run(inputs, resolved, self.engine, edits)

    def _measured(self, key: Hashable, compute: Callable[[], Any]) -> Any:
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


async def get_service(request: Request) -> Service:
    """The app's one Service. async: FastAPI runs a plain-def dependency in a worker thread, a hop per request."""
    service: Service = request.app.state.service
    return service


ServiceDep = Annotated[Service, Depends(get_service)]
__all__ = ["Service", "ServiceDep", "get_service"]
