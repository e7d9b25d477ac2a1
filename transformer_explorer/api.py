"""The methods Explorer (in process) and Client (over HTTP) share: each one builds the REST API's request body,
asks through `_ask` (the one thing the two implement differently) and decodes the JSON answer into a result
(transformer_explorer.results). Tensors are always asked as base64 float32, so an array is the model's float32
value bit for bit, whichever way it came.

Each method's cost is listed in docs/NOTEBOOK.md; the REST fields they fill are in docs/API.md and /docs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from transformer_explorer.results import (
    ActivationPatching,
    Attention,
    ExplorerError,
    Generated,
    Lab,
    LogitAttribution,
    Predict,
    Result,
    Steering,
    Tokens,
    Trace,
    decode,
)

# the explorer's routes these methods use (app/endpoints.py names them; a lab experiment's is its kebab-case name)
ROUTES = {"tokenize": "/api/tokenize", "trace": "/api/trace", "attention": "/api/attention",
          "predict": "/api/predict", "generate": "/api/predict"}
TENSORS = {"encoding": "base64", "dtype": "float32"}  # exact float32 values (Plotly's typed-array form)


@dataclass(frozen=True)
class ExperimentSpec:
    """A lab experiment as the server lists it: its route, method and whether its request names a model."""

    name: str
    route: str
    method: str  # POST: a JSON body; GET: a query
    takes_model: bool


def _set(body: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """The body with the fields given (None: left out, so the server's default applies)."""
    return {**body, **{k: v for k, v in fields.items() if v is not None}}


class Api:
    """The API's calls on one model (`model`: None, the server's default). Subclasses implement `_ask`."""

    model: str | None = None

    def __init__(self) -> None:
        self._described: dict[str, dict[str, Any]] = {}  # model name -> its description, asked once

    # ------------------------------------------------------------ what subclasses implement

    def _ask(self, kind: str, route: str, body: dict[str, Any], method: str = "POST") -> dict[str, Any]:
        """Send `body` to the endpoint or experiment `kind` (at `route`); its JSON answer, or ExplorerError."""
        raise NotImplementedError

    def experiments(self) -> dict[str, ExperimentSpec]:
        """The lab experiments `lab()` runs, by name (GET /api/lab/experiments), in the lab page's order."""
        raise NotImplementedError

    def describe(self, model: str | None = None) -> dict[str, Any]:
        """A model's description, as GET /api/models/{name} gives it: its config, sizes, stages, head labels
        (`model`: None, this object's). The widget's panels read it (vocabulary size, layers, heads)."""
        name = model or self.model
        if name is None:
            raise ValueError("describe() needs a model name: this client uses the server's default model")
        if name not in self._described:
            self._described[name] = self._ask("describe", "/api/models/{name}", {"name": name}, "GET")
        return self._described[name]

    # ------------------------------------------------------------ the explorer

    def _body(self, text: str, chat: bool = False, **fields: Any) -> dict[str, Any]:
        return _set({"text": text}, model=self.model, chat=chat or None, **fields)

    def _result(self, kind: str, body: dict[str, Any], route: str | None = None) -> Result:
        answer = self._ask(kind, route or ROUTES[kind], body)
        return decode(kind, answer, body, self.describe(answer["model"]))

    def tokenize(self, text: str, *, chat: bool = False) -> Tokens:
        """The text's tokens (id, text, character span). Cost: no forward pass."""
        result = self._result("tokenize", self._body(text, chat))
        assert isinstance(result, Tokens)
        return result

    def trace(self, text: str, stages: Sequence[str] | None = None, *, layers: Sequence[int] | None = None,
              heads: Sequence[int] | None = None, top_k: int = 10, interventions: dict[str, Any] | None = None,
              chat: bool = False) -> Trace:
        """Stages of the forward pass, by name or fnmatch pattern ('blocks.0.attn.*', 'blocks.*.hook_resid_post'),
        each a Tensor with named dims; None: the server's first view. `top_k` next-token guesses (0: none).
        Cost: one forward pass (cached for the same text)."""
        body = self._body(text, chat, stages=list(stages) if stages is not None else None,
                          layers=list(layers) if layers is not None else None,
                          heads=list(heads) if heads is not None else None, top_k=top_k,
                          interventions=interventions, **TENSORS)
        result = self._result("trace", body)
        assert isinstance(result, Trace)
        return result

    def attention(self, text: str, layer: int = 0, head: int | None = None, *,
                  interventions: dict[str, Any] | None = None, chat: bool = False) -> Attention:
        """One attention layer (every head, or `head`): raw, scaled and masked scores and the pattern
        [head, q_pos, k_pos], with q and k. Cost: one forward pass (shared with trace)."""
        body = self._body(text, chat, layer=layer, head=head, interventions=interventions, **TENSORS)
        result = self._result("attention", body)
        assert isinstance(result, Attention)
        return result

    def predict(self, text: str, *, top_k: int = 10, temperature: float = 1.0, seed: int = 0,
                max_new_tokens: int = 8, interventions: dict[str, Any] | None = None, chat: bool = False) -> Predict:
        """The next-token table (top_k most likely, with probability and logit) and a seeded sample.
        Cost: one forward pass, plus max_new_tokens decoding steps."""
        body = self._body(text, chat, top_k=top_k, temperature=temperature, seed=seed,
                          max_new_tokens=max_new_tokens, interventions=interventions)
        result = self._result("predict", body)
        assert isinstance(result, Predict)
        return result

    def generate(self, text: str, max_new_tokens: int = 16, *, temperature: float = 1.0, seed: int = 0,
                 top_k: int | None = None, top_p: float | None = None, chat: bool = False) -> Generated:
        """A continuation of `max_new_tokens` (at most 64) sampled tokens: same seed, same text; a temperature of
        0.01 is greedy. Cost: one forward pass per new token (KV-cached)."""
        body = self._body(text, chat, top_k=1, temperature=temperature, seed=seed, max_new_tokens=max_new_tokens,
                          sample_top_k=top_k, top_p=top_p)
        result = self._result("generate", body)
        assert isinstance(result, Generated)
        return result

    # ------------------------------------------------------------ the lab's "why" experiments

    def logit_attribution(self, text: str, target: str | None = None, *, versus: str | None = None,
                          position: int | None = None, top: int = 3) -> LogitAttribution:
        """The logit of `target` (default: the model's top token) after `text`, split into what every head,
        FFN and the embeddings wrote into the residual stream; the parts add up to the logit.
        Cost: one forward pass."""
        result = self.lab("logit_attribution", text=text, target=target, versus=versus, position=position, top=top)
        assert isinstance(result, LogitAttribution)
        return result

    def activation_patching(self, text: str, corrupted: str, *, clean_answer: str | None = None,
                            corrupted_answer: str | None = None, grid: str = "all",
                            knockout: bool = True) -> ActivationPatching:
        """Patch the clean run's activations into the corrupted prompt (same token count), one site at a time:
        how much of the clean answer comes back (0: none, 1: all). Cost: one batched forward pass per layer
        and site (the answer's `forwards`)."""
        result = self.lab("activation_patching", text=text, corrupted=corrupted, clean_answer=clean_answer,
                          corrupted_answer=corrupted_answer, grid=grid, knockout=knockout)
        assert isinstance(result, ActivationPatching)
        return result

    def steering(self, text: str, a: Sequence[str], b: Sequence[str], *, layer: int = 0, alpha: float = 1.0,
                 max_new_tokens: int = 12) -> Steering:
        """Add alpha x (mean(A) - mean(B)) at the input of `layer` and continue `text` greedily, with and without.
        Cost: one forward pass per prompt of A and B, two per new token."""
        result = self.lab("steering", text=text, a=list(a), b=list(b), layer=layer, alpha=alpha,
                          max_new_tokens=max_new_tokens)
        assert isinstance(result, Steering)
        return result

    def lab(self, name: str, **params: Any) -> Lab:
        """Any lab experiment by name (experiments() lists them), with its REST fields as keywords (None: its
        default); `model` is this object's unless given."""
        known = self.experiments()
        spec = known.get(name)
        if spec is None:
            raise ExplorerError("not_found", f"There is no lab experiment {name!r}; the experiments are "
                                             f"{', '.join(known)}.", 404)
        body = _set({"model": self.model} if spec.takes_model and self.model is not None else {}, **params)
        answer = self._ask(name, spec.route, body, spec.method)
        info = self.describe(answer["model"]) if isinstance(answer.get("model"), str) else {}
        result = decode(name, answer, body, info)
        assert isinstance(result, Lab)
        return result
