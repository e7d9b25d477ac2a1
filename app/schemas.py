"""Request and response models, with the examples shown at /docs.

Tensors are `{name, dims, shape, dtype, data}` with the batch dimension removed; `data` is
nested lists (4 significant digits, masked cells null) or, with `encoding: "base64"`,
Plotly's typed array `{dtype, bdata, shape}` ("f4" float32, "f2" float16 — plotly.js has no
f2, so decode it to a Float32Array in the page first; masked cells are NaN).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, GetJsonSchemaHandler, Strict
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from model.config import TransformerConfig
from model.positional import KINDS


@dataclass(frozen=True)
class KindName:
    """A positional-encoding kind's name, read from the one registry (model/positional.py) when a request is
    checked and when the schema is written, so a kind registered after import is taken and listed too.
    `shown`: only kinds with numbers to show (GET /api/positional-encoding; "none" changes nothing)."""

    shown: bool

    def names(self) -> list[str]:
        return [name for name, kind in KINDS.items() if not self.shown or kind.where != "nowhere"]

    def __call__(self, name: str) -> str:
        if name in self.names():
            return name
        # a name is repeated back only when it is a plain word (a client's text is never echoed)
        named = f"'{name}'" if re.fullmatch(r"[A-Za-z0-9_-]{1,32}", name) else "of that name"
        why = "has no numbers to show" if name in KINDS else "does not exist"
        raise ValueError(f"the positional encoding {named} {why}; the known kinds are {', '.join(self.names())}")

    def __get_pydantic_json_schema__(self, core: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        schema = handler(core)
        schema["enum"] = self.names()
        return schema


PosKind = Annotated[str, AfterValidator(KindName(shown=False)), KindName(shown=False)]
ShownPosKind = Annotated[str, AfterValidator(KindName(shown=True)), KindName(shown=True)]

Encoding = Literal["list", "base64"]
DType = Literal["float32", "float16"]
StackName = Literal["encoder", "decoder"]

def json_number(value: object, integral: bool) -> object:
    """What JSON Schema calls a number (an integer: also 2.0), never a boolean or a string."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("Input should be a valid " + ("integer" if integral else "number"))
    if integral and isinstance(value, float) and not value.is_integer():
        raise ValueError("Input should be a valid integer")
    return value


# Request fields take exactly what their JSON Schema says: pydantic's lax mode would also take `true` as 1,
# "3" as 3 and 1 as true, which the schema forbids (tests/contract checks the two agree).
INTEGER = BeforeValidator(lambda v: json_number(v, integral=True))
NUMBER = BeforeValidator(lambda v: json_number(v, integral=False))
Int = Annotated[int, INTEGER]
Float = Annotated[float, NUMBER]  # optional ones put their bounds first: Annotated[float, Field(...), NUMBER]
Bool = Annotated[bool, Strict()]

LIMITS = {"d_model": 1024, "n_layers": 12, "n_heads": 16, "d_mlp": 4096}
# a stage name or pattern: the longest name of any model served is under 60 characters, and a bound keeps a
# pattern's matching cheap (fnmatch's translation of "[[[..." grows with the square of its length: 15,000
# characters took 8 s of the event loop)
StageName = Annotated[str, Field(min_length=1, max_length=128)]


# ---------------------------------------------------------------- requests


class InlineConfig(BaseModel):
    """A from-scratch model with random (seeded) weights and a byte-level tokenizer (vocabulary 256)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"architecture": "decoder", "d_model": 64, "n_layers": 2, "n_heads": 1, "pos_encoding": "rope", "seed": 0}
    ]})

    architecture: Literal["decoder", "encoder", "encoder-decoder"] = "decoder"
    d_model: Int = Field(64, ge=2, le=LIMITS["d_model"])
    n_layers: Int = Field(2, ge=1, le=LIMITS["n_layers"])
    n_decoder_layers: Annotated[int, Field(ge=1, le=LIMITS["n_layers"]), INTEGER] | None = Field(None)
    n_heads: Int = Field(4, ge=1, le=LIMITS["n_heads"])
    n_kv_heads: Annotated[int, Field(ge=1, le=LIMITS["n_heads"]), INTEGER] | None = Field(None)
    d_mlp: Annotated[int, Field(ge=1, le=LIMITS["d_mlp"]), INTEGER] | None = Field(None)
    pos_encoding: PosKind = "sinusoidal"
    norm: Literal["layernorm", "rmsnorm"] = "layernorm"
    norm_placement: Literal["pre", "post"] = "pre"
    activation: Literal["relu", "gelu", "gelu_tanh", "swiglu"] = "gelu"
    bias: Bool = True
    sliding_window: Annotated[int, Field(ge=1, le=4096), INTEGER] | None = Field(None)
    seed: Int = Field(0, ge=0, le=2**31 - 1)

    def to_config(self, n_ctx: int) -> TransformerConfig:
        """Raises model.config.ConfigError for combinations that cannot work (e.g. 64 % 3 heads)."""
        vocab = 257 if self.architecture == "encoder-decoder" else 256  # bytes (+ the start token)
        return TransformerConfig(vocab_size=vocab, n_ctx=n_ctx, **self.model_dump())


class InterventionsIn(BaseModel):
    """Change one thing in this forward pass and see why (self-attention of every layer unless named)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"no_scale": True}, {"no_mask": True}, {"ablate_heads": [[1, 0]]}, {"shuffle": [0, 2, 1, 3]},
    ]})

    no_scale: Bool = Field(False, description="softmax(Q·Kᵀ) without ÷√d_head: watch the softmax saturate.")
    no_mask: Bool = Field(False, description="No mask: a decoder may see the future.")
    window: Annotated[int, Field(ge=1, le=4096), INTEGER] | None = Field(
        None, description="Each query sees only keys fewer than W away.")
    temperature: Annotated[float, Field(ge=0.01, le=100), NUMBER] | None = Field(
        None, description="softmax(scores / T) in every pattern.")
    ablate_heads: list[Annotated[list[Int], Field(min_length=2, max_length=2)]] | None = Field(
        None, max_length=256, description="[[layer, head], ...] whose output is zeroed.")
    ablate_stack: Literal["encoder", "decoder"] | None = Field(
        None, description="Encoder-decoder only: ablate in this stack alone (default: every stack with that layer).")
    shuffle: list[Int] | None = Field(
        None, max_length=512, description="Run the tokens in this order: a permutation of 0..n-1 over the "
                                          "tokens /api/tokenize lists (the source tokens for encoder-decoders).")


class ModelChoice(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(None, max_length=64, description="A name from GET /api/models (default: the default).")
    config: InlineConfig | None = Field(None, description="Instead of `model`: a from-scratch model, random weights.")
    snapshot: Annotated[int, Field(ge=0, le=10**9), INTEGER] | None = Field(
        None,
        description="A training step listed under `meta.snapshots` of the model: its weights at that step "
                    "(watch attention change as the model learns). Omitted: the final weights.")


class TextInput(ModelChoice):
    # minLength stated in the schema only: pydantic's own length check refuses lone surrogates, which are valid
    # input here; the service refuses "" with empty_text
    text: str = Field(description="Any Unicode text (the source, for encoder-decoder models).",
                      json_schema_extra={"minLength": 1})
    target_text: str | None = Field(
        None, description="Encoder-decoder only: the decoder input so far (omitted: just the start token). "
                          "Ignored by other models.")
    chat: Bool = Field(False, description="The text as one user message in the model's chat template (meta "
                       "`chat_template`), special tokens as tokens; 422 invalid_option for a model without one.")


class Intervenable(TextInput):
    interventions: InterventionsIn | None = Field(None, description="Change one thing in the forward pass.")


class TokenizeRequest(TextInput):
    model_config = ConfigDict(json_schema_extra={"examples": [
        {"model": "tiny-gpt", "text": "The cat sat on the mat."}, {"model": "tiny-gpt", "text": "我爱北京天安门广场。"},
    ]})


class TraceRequest(Intervenable):
    model_config = ConfigDict(json_schema_extra={"examples": [
        {"model": "tiny-gpt", "text": "The cat sat on the mat."},
        {"model": "tiny-gpt", "text": "The cat sat on the mat.", "stages": ["blocks.*.attn.hook_pattern"],
         "layers": [1], "heads": [0, 2], "encoding": "base64", "dtype": "float16"},
        {"config": {"n_heads": 1, "pos_encoding": "rope"}, "text": "what if one head?"},
    ]})

    stages: list[StageName] | None = Field(
        None, max_length=64, description="Trace names or fnmatch patterns (see `stages` of GET /api/models/{name}). "
                                         "Default: a small first view (tokens, embeddings, positions; "
                                         "cross-attention for encoder-decoders).")
    layers: list[Int] | None = Field(None, max_length=64, description="Keep `blocks.{L}.*` stages of these layers.")
    heads: list[Int] | None = Field(None, max_length=16, description="Keep these heads along head dimensions.")
    encoding: Encoding = "list"
    dtype: DType = "float32"
    top_k: Int = Field(10, ge=0, le=50, description="Most likely next tokens at the last position (0: none).")


class LayerRequest(Intervenable):
    layer: Int = Field(0, description="Layer index, from 0.")
    head: Int | None = Field(None, description="One head, or all heads when omitted.")
    cross: Bool = Field(False, description="Cross-attention (decoder of an encoder-decoder model).")
    stack: StackName | None = Field(
        None, description="Encoder-decoder only: which stack (default: encoder; decoder when cross).")
    encoding: Encoding = "list"
    dtype: DType = "float32"


class AttentionRequest(LayerRequest):
    model_config = ConfigDict(json_schema_extra={"examples": [
        {"model": "tiny-gpt", "text": "The cat sat on the mat.", "layer": 0, "head": 1},
        {"model": "tiny-translator", "text": "I love you.", "target_text": "我", "layer": 0, "cross": True},
    ]})


class QKVRequest(LayerRequest):
    model_config = ConfigDict(json_schema_extra={"examples": [
        {"model": "tiny-gpt", "text": "The cat sat on the mat.", "layer": 0, "head": 0},
    ]})


class ActivationsRequest(Intervenable):
    model_config = ConfigDict(json_schema_extra={"examples": [
        {"model": "tiny-gpt", "text": "The cat sat on the mat.", "layer": 1},
        {"model": "tiny-gpt", "text": "The cat sat on the mat."},
    ]})

    layer: Int | None = Field(None, description="One layer, or all layers when omitted.")
    stack: StackName | None = None
    encoding: Encoding = "list"
    dtype: DType = "float32"


class PositionalKindOut(BaseModel):
    name: str
    where: Literal["embedding", "q_k", "scores", "nowhere"] = Field(
        description="What the kind changes: the token vectors, q and k (a rotation), the attention scores, or nothing.")
    learned: bool = Field(description="A table trained with the model: it has no row past the trained context.")
    extrapolates: bool = Field(description="Defined at positions past the longest training sequence.")
    paper: str


class PositionalQuery(BaseModel):
    """GET /api/positional-encoding's query: a scheme, its sizes, or a model to take them from."""

    kind: ShownPosKind | None = Field(
        None, description="Default: the model's own kind, else sinusoidal.")
    length: int = Field(32, ge=1, le=512, description="Number of positions.")
    d_model: int | None = Field(None, ge=2, le=1024)
    n_heads: int | None = Field(None, ge=1, le=16)
    base: float | None = Field(None, gt=1, le=1e7, description="RoPE base (theta).")
    causal: bool = Field(True, description="ALiBi: distances q - k (causal) or |q - k|.")
    model: str | None = Field(None, max_length=64, description="Take sizes (and a learned table) from it.")
    encoding: Encoding = "list"
    dtype: DType = "float32"


# ---------------------------------------------------------------- responses


class TokenOut(BaseModel):
    id: int
    text: str
    start: int = Field(description="Character span [start, end) of the input (`chat`: of chat_text); an added start "
                                   "token has start == end.")
    end: int


class TensorOut(BaseModel):
    name: str
    dims: list[str]
    shape: list[int]
    dtype: str
    data: Any = Field(description="Nested lists (null = masked) or {dtype, bdata, shape} when encoding is base64.")


class ErrorBody(BaseModel):
    code: str
    message: str


class ErrorOut(BaseModel):
    error: ErrorBody


class HealthOut(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [
        {"status": "ok", "device": "cpu", "torch": "2.13.0", "models": ["tiny-gpt", "minilm"], "loaded": ["tiny-gpt"]}
    ]})
    status: str
    device: str
    torch: str
    models: list[str]
    loaded: list[str]
    default: str | None = None


class StageInfo(BaseModel):
    name: str
    dims: list[str]


class WeightInfo(BaseModel):
    name: str
    shape: list[int]
    count: int


class ModelInfo(BaseModel):
    name: str
    description: str
    architecture: str
    config: dict[str, Any]
    n_layers: int
    n_decoder_layers: int | None
    n_heads: int
    n_kv_heads: int
    d_head: int
    parameters: dict[str, int]
    weights: list[WeightInfo] = Field(default_factory=list, description="Every weight matrix and vector once, "
                                      "with its shape: per-block counts and shares come from these.")
    stages: list[StageInfo]
    tokenizer: str
    vocab_size: int
    default: bool
    meta: dict[str, Any]


class TokenizeOut(BaseModel):
    model: str
    tokens: list[TokenOut]
    target_tokens: list[TokenOut] | None = None
    chat_text: str | None = Field(None, description="With `chat`: the text as the chat template wrote it.")


class Prediction(BaseModel):
    id: int
    text: str
    prob: float
    logit: float


class TraceOut(BaseModel):
    model: str
    tokens: list[TokenOut]
    target_tokens: list[TokenOut] | None = None
    stages: dict[str, TensorOut]
    top_tokens: list[Prediction] | None = Field(None, description="Next-token guesses at the last position.")
    loss: float | None = Field(None, description="Mean next-token cross-entropy of the text (nats), with `top_k`.")


class AttentionOut(BaseModel):
    model: str
    stack: str | None
    layer: int
    cross: bool
    heads: list[int]
    kv_heads: list[int] = Field(description="The K/V head each query head reads (GQA groups share one).")
    d_head: int
    scale: float = Field(description="1 / sqrt(d_head): scaled = raw × scale (+ ALiBi bias).")
    rope: bool
    query_tokens: list[TokenOut]
    key_tokens: list[TokenOut]
    raw: TensorOut
    scaled: TensorOut
    masked: TensorOut
    pattern: TensorOut
    q: TensorOut
    k: TensorOut


class QKVOut(BaseModel):
    model: str
    stack: str | None
    layer: int
    cross: bool
    heads: list[int]
    kv_heads: list[int]
    query_tokens: list[TokenOut]
    key_tokens: list[TokenOut]
    tensors: dict[str, TensorOut] = Field(
        description="q, k, v (+ rot_q, rot_k with RoPE), pattern and z = pattern · v.")


class ActivationsOut(BaseModel):
    model: str
    stack: str | None
    layers: list[int]
    tokens: list[TokenOut]
    stages: dict[str, TensorOut]
    norms: dict[str, TensorOut] = Field(description="Per-position L2 norm of each residual-stream stage.")


class PositionalOut(BaseModel):
    kind: str
    model: str | None
    length: int
    d_model: int
    n_heads: int
    d_head: int
    base: float | None
    tensors: dict[str, TensorOut]


ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorOut, "description": "Unknown model"},
    413: {"model": ErrorOut, "description": "Body over 64 KB"},
    422: {"model": ErrorOut, "description": "Empty or too long text, out-of-range layer/head, invalid request"},
    503: {"model": ErrorOut, "description": "Busy: retry after the Retry-After header's seconds"},
}
