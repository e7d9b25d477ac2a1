"""What the Python API returns: small dataclasses holding numpy arrays with named dimensions.

Each result is decoded from the API's own JSON answer (the same dict whether it came from the in-process Explorer
or over HTTP from a server), so the two can only differ if the answers differ. A tensor the server sent as
base64 float32 is decoded to the same float32 bits (no rounding); `answer` keeps the whole answer, which the
widget (transformer_explorer.widget) hands to the page's own panel code. Tables become pandas DataFrames with
`to_pandas()` when pandas is installed (it is optional).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

_TYPED = {"f4": "<f4", "f2": "<f2", "i4": "<i4"}


class ExplorerError(Exception):
    """A refusal from the API, in process or over HTTP: its code (e.g. 'unknown_stage'), message and HTTP status."""

    def __init__(self, code: str, message: str, status: int = 422) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status


def _pandas() -> Any:
    try:
        import pandas
    except ImportError as error:  # optional: the arrays are the result, a DataFrame a convenience
        raise ImportError("to_pandas() needs pandas: pip install pandas") from error
    return pandas


@dataclass(frozen=True)
class Tensor:
    """One traced tensor: `values[i, j, ...]` along `dims` (e.g. ('pos', 'd_model')); masked cells are NaN."""

    name: str
    dims: tuple[str, ...]
    values: np.ndarray
    nonfinite: int = 0  # NaN/Inf cells that no mask put there (an overflow), as the server counted them

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.values.shape)

    def sel(self, **fixed: int) -> np.ndarray:
        """The array with some dimensions fixed by name: `pattern.sel(head=0)` -> [q_pos, k_pos]."""
        unknown = set(fixed) - set(self.dims)
        if unknown:
            raise KeyError(f"{self.name} has no dimension {sorted(unknown)}; its dims are {self.dims}")
        return self.values[tuple(fixed.get(dim, slice(None)) for dim in self.dims)]

    def to_pandas(self, rows: list[str] | None = None) -> Any:
        """A 2-D tensor as a DataFrame (rows: e.g. the token texts)."""
        if self.values.ndim != 2:
            raise ValueError(f"{self.name} has {self.values.ndim} dimensions {self.dims}; fix some with sel() first")
        return _pandas().DataFrame(self.values, index=rows)

    @classmethod
    def from_answer(cls, payload: dict[str, Any]) -> Tensor:
        data = payload["data"]
        if isinstance(data, dict):  # base64: the exact little-endian values the server computed
            flat = np.frombuffer(base64.b64decode(data["bdata"]), dtype=_TYPED[data["dtype"]])
            values = flat.astype(flat.dtype.newbyteorder("=")).reshape(payload["shape"])
        else:  # nested lists (4 significant digits): null -> NaN
            cells = np.array(data, dtype=object)
            cells[cells == None] = np.nan  # noqa: E711 (elementwise on an object array)
            values = cells.astype(np.float64).reshape(payload["shape"])
        return cls(payload["name"], tuple(payload["dims"]), values, int(payload.get("nonfinite") or 0))


@dataclass(frozen=True)
class Token:
    id: int
    text: str
    start: int | None = None  # character span [start, end) in the text (an added start token: start == end)
    end: int | None = None


def tokens_of(items: list[dict[str, Any]] | None) -> list[Token]:
    return [Token(t["id"], t["text"], t.get("start"), t.get("end")) for t in items or []]


def _token_table(tokens: list[Token]) -> Any:
    return _pandas().DataFrame([vars(t) for t in tokens])


@dataclass(frozen=True)
class Prediction:
    id: int
    text: str
    prob: float
    logit: float


@dataclass(frozen=True)
class Result:
    """What every result has: the model, and the API's whole answer (what the widget draws)."""

    model: str
    answer: dict[str, Any] = field(repr=False)
    kind: str = field(default="", repr=False)  # the endpoint or lab experiment that answered
    request: dict[str, Any] = field(default_factory=dict, repr=False, kw_only=True)  # the body it answered
    info: dict[str, Any] = field(default_factory=dict, repr=False, kw_only=True)  # the model's description


@dataclass(frozen=True)
class Tokens(Result):
    tokens: list[Token] = field(default_factory=list)
    target_tokens: list[Token] = field(default_factory=list)

    def to_pandas(self) -> Any:
        return _token_table(self.tokens)


@dataclass(frozen=True)
class Trace(Result):
    """Some stages of a forward pass (`stages`: name -> Tensor), with the next-token guesses when asked."""

    tokens: list[Token] = field(default_factory=list)
    stages: dict[str, Tensor] = field(default_factory=dict)
    top_tokens: list[Prediction] = field(default_factory=list)
    loss: float | None = None

    def __getitem__(self, stage: str) -> Tensor:
        return self.stages[stage]


@dataclass(frozen=True)
class Attention(Result):
    """One attention layer: scores before (raw) and after the scale (scaled), masked, and the pattern
    (softmax), each [head, q_pos, k_pos]; q and k along their own dims."""

    layer: int = 0
    heads: list[int] = field(default_factory=list)
    query_tokens: list[Token] = field(default_factory=list)
    key_tokens: list[Token] = field(default_factory=list)
    scale: float = 0.0
    raw: Tensor | None = None
    scaled: Tensor | None = None
    masked: Tensor | None = None
    pattern: Tensor | None = None
    q: Tensor | None = None
    k: Tensor | None = None


@dataclass(frozen=True)
class Predict(Result):
    """The next-token table (softmax(logits / temperature), most likely first) and a sampled continuation."""

    tokens: list[Token] = field(default_factory=list)
    temperature: float = 1.0
    top: list[Prediction] = field(default_factory=list)
    rest_prob: float = 0.0
    generated: str = ""
    loss: float | None = None

    def to_pandas(self) -> Any:
        return _pandas().DataFrame([vars(p) for p in self.top])


@dataclass(frozen=True)
class Generated(Result):
    text: str = ""  # the continuation alone
    tokens: list[Token] = field(default_factory=list)  # its tokens
    seed: int = 0


@dataclass(frozen=True)
class Lab(Result):
    """A lab experiment's answer (`data`: its JSON fields). `array(key)` reads a numeric field as numpy."""

    data: dict[str, Any] = field(default_factory=dict)

    def array(self, key: str) -> np.ndarray:
        return np.asarray(self.data[key], dtype=np.float64)

    def __getitem__(self, key: str) -> Any:
        return self.data[key]


@dataclass(frozen=True)
class LogitAttribution(Lab):
    """The target's logit split into what each part wrote: heads [layer, head], FFNs [layer], embeddings."""

    heads: Tensor | None = None
    ffn: Tensor | None = None
    logit: float = 0.0
    total: float = 0.0


@dataclass(frozen=True)
class ActivationPatching(Lab):
    """Patching scores (0 = the corrupted run, 1 = the clean run), one grid per site: [layer, position|head]."""

    grids: dict[str, Tensor] = field(default_factory=dict)


@dataclass(frozen=True)
class Steering(Lab):
    plain: str = ""
    steered: str = ""

    def to_pandas(self) -> Any:
        return _pandas().DataFrame(self.data["moved"])


def _predictions(items: list[dict[str, Any]] | None) -> list[Prediction]:
    return [Prediction(p["id"], p["text"], p["prob"], p["logit"]) for p in items or []]


def _numbers(name: str, dims: tuple[str, ...], values: Any) -> Tensor:
    return Tensor(name, dims, np.asarray(values, dtype=np.float64))


def decode(kind: str, answer: dict[str, Any], request: dict[str, Any] | None = None,
           info: dict[str, Any] | None = None) -> Result:
    """The result of endpoint or experiment `kind` from its JSON answer to `request` (`info`: the model's
    description, GET /api/models/{name})."""
    return replace(_decoded(kind, answer), request=dict(request or {}), info=dict(info or {}))


def _decoded(kind: str, answer: dict[str, Any]) -> Result:
    model = answer.get("model", "")
    if kind == "tokenize":
        return Tokens(model, answer, kind, tokens_of(answer["tokens"]), tokens_of(answer.get("target_tokens")))
    if kind == "trace":
        stages = {name: Tensor.from_answer(t) for name, t in answer["stages"].items()}
        return Trace(model, answer, kind, tokens_of(answer["tokens"]), stages,
                     _predictions(answer.get("top_tokens")), answer.get("loss"))
    if kind == "attention":
        part = {p: Tensor.from_answer(answer[p]) for p in ("raw", "scaled", "masked", "pattern", "q", "k")}
        return Attention(model, answer, kind, answer["layer"], answer["heads"], tokens_of(answer["query_tokens"]),
                         tokens_of(answer["key_tokens"]), answer["scale"], raw=part["raw"], scaled=part["scaled"],
                         masked=part["masked"], pattern=part["pattern"], q=part["q"], k=part["k"])
    if kind == "predict":
        return Predict(model, answer, kind, tokens_of(answer["tokens"]), answer["temperature"],
                       _predictions(answer["top_k"]), answer["rest_prob"], answer["generated"]["text"],
                       answer.get("loss"))
    if kind == "generate":
        made = answer["generated"]
        return Generated(model, answer, kind, made["text"], tokens_of(made["tokens"]), made["seed"])
    if kind == "logit_attribution":
        return LogitAttribution(model, answer, kind, answer, _numbers("heads", ("layer", "head"), answer["heads"]),
                                _numbers("ffn", ("layer",), answer["ffn"]), answer["logit"], answer["total"])
    if kind == "activation_patching":
        grids = {g["name"]: _numbers(g["name"], ("layer", g["columns"]), g["scores"]) for g in answer["grids"]}
        return ActivationPatching(model, answer, kind, answer, grids)
    if kind == "steering":
        return Steering(model, answer, kind, answer, answer["plain"]["text"], answer["steered"]["text"])
    return Lab(model, answer, kind, answer)
