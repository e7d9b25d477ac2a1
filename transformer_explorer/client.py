"""Client: the same API as Explorer, answered by a running server (`transformer-explorer serve`) over HTTP.

Standard library only (urllib): the client adds no dependency, and runs where only the server has the model.
The server's answers are decoded exactly as the Explorer's (transformer_explorer.results.decode).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from transformer_explorer.api import Api, ExperimentSpec
from transformer_explorer.results import ExplorerError


class Client(Api):
    """The API of the server at `url` (e.g. "http://127.0.0.1:8000"), on `model` (None: the server's default)."""

    def __init__(self, url: str = "http://127.0.0.1:8000", model: str | None = None, *, timeout: float = 120.0
                 ) -> None:
        super().__init__()
        self.url = url.rstrip("/")
        self.model = model
        self.timeout = timeout
        self._experiments: dict[str, ExperimentSpec] | None = None

    def __repr__(self) -> str:
        return f"Client({self.url!r}, model={self.model!r})"

    def _http(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode("utf-8")
        headers = {"Content-Type": "application/json"} if data is not None else {}
        request = urllib.request.Request(self.url + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310 (the user's URL)
                return json.loads(response.read())
        except urllib.error.HTTPError as error:
            try:
                payload = json.loads(error.read()).get("error", {})
            except (ValueError, AttributeError):
                payload = {}
            raise ExplorerError(payload.get("code", f"http_{error.code}"), payload.get("message", str(error.reason)),
                                error.code) from None
        except (urllib.error.URLError, OSError) as error:  # no server there, a timeout
            raise ExplorerError("network", f"{self.url} did not answer: {error}", 0) from None

    def _ask(self, kind: str, route: str, body: dict[str, Any], method: str = "POST") -> dict[str, Any]:
        if "{" in route:  # a path's fields (GET /api/models/{name})
            route = route.format(**{k: urllib.parse.quote(str(v), safe="") for k, v in body.items()})
            body = {}
        if method == "GET":
            query = urllib.parse.urlencode(body, doseq=True)
            answer: dict[str, Any] = self._http("GET", route + ("?" + query if query else ""))
            return answer
        answer = self._http("POST", route, body)
        return answer

    def experiments(self) -> dict[str, ExperimentSpec]:
        if self._experiments is None:
            listed = self._http("GET", "/api/lab/experiments")
            schema = self._http("GET", "/openapi.json")
            self._experiments = {e["name"]: ExperimentSpec(e["name"], e["path"], e["method"],
                                                           _takes_model(schema, e["path"], e["method"]))
                                 for e in listed}
        return self._experiments


def _takes_model(schema: dict[str, Any], path: str, method: str) -> bool:
    """Whether the route's request (its JSON body, or its query) has a `model` field, from the OpenAPI schema."""
    operation = schema["paths"][path][method.lower()]
    if any(p.get("name") == "model" for p in operation.get("parameters", [])):
        return True
    body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
    ref = body.get("$ref", "")
    if not ref:
        return "model" in body.get("properties", {})
    component = schema["components"]["schemas"][ref.rsplit("/", 1)[-1]]
    return "model" in component.get("properties", {})
