"""Request and response models, with the examples shown at /docs: one module per concept.

    fields       what a field accepts (strict JSON numbers and booleans, Text, Encoding, DType, StackName, bounds)
    inputs       what every request about a model carries: ModelChoice, InlineConfig, TextInput, interventions
                 (and ModelName, NoInput: a model by name alone, no request)
    outputs      what every answer is made of: TokenOut, TensorOut, the error shape (ERRORS)
    models       GET /api/health, /api/models
    trace        POST /api/tokenize, /api/trace
    attention    POST /api/attention, /api/qkv (one attention layer)
    activations  POST /api/activations
    predict      POST /api/predict
    positional   the positional-encoding kinds and GET /api/positional-encoding
    lessons      GET /api/lessons/{chapter}/claims and /questions

Every name is importable from `app.schemas` itself; app/lab/<name>.py holds each lab experiment's own models.

Tensors are `{name, dims, shape, dtype, data}` with the batch dimension removed; `data` is
nested lists (4 significant digits, masked cells null) or, with `encoding: "base64"`,
Plotly's typed array `{dtype, bdata, shape}` ("f4" float32, "f2" float16 — plotly.js has no
f2, so decode it to a Float32Array in the page first; masked cells are NaN).
"""

from __future__ import annotations

from app.schemas.activations import ActivationsOut, ActivationsRequest
from app.schemas.attention import AttentionOut, AttentionRequest, LayerRequest, QKVOut, QKVRequest
from app.schemas.fields import INTEGER, LIMITS, NUMBER, Bool, DType, Encoding, Float, Int, StackName, StageName, Text
from app.schemas.inputs import (
    InlineConfig,
    Intervenable,
    InterventionsIn,
    ModelChoice,
    ModelName,
    NoInput,
    TextInput,
)
from app.schemas.lessons import (
    ClaimOut,
    LessonClaimsOut,
    LessonQuestionsOut,
    LessonQuestionsView,
    LessonView,
    QuestionOut,
    VerdictOut,
)
from app.schemas.models import HealthOut, LoadingModel, ModelInfo, RefusedModel, StageInfo, WeightInfo
from app.schemas.outputs import ERRORS, ErrorBody, ErrorOut, TensorOut, TokenOut, VocabToken
from app.schemas.positional import PositionalKindOut, PositionalOut, PositionalQuery, PosKind, ShownPosKind
from app.schemas.predict import Generated, PredictOut, PredictRequest, SamplingOut
from app.schemas.trace import Prediction, TokenizeOut, TokenizeRequest, TraceOut, TraceRequest

__all__ = [
    "ClaimOut",
    "LessonClaimsOut",
    "LessonView",
    "LessonQuestionsOut",
    "LessonQuestionsView",
    "QuestionOut",
    "VerdictOut",
    "ActivationsOut",
    "ActivationsRequest",
    "AttentionOut",
    "AttentionRequest",
    "Bool",
    "DType",
    "ERRORS",
    "Encoding",
    "ErrorBody",
    "ErrorOut",
    "Float",
    "Generated",
    "HealthOut",
    "INTEGER",
    "InlineConfig",
    "Int",
    "Intervenable",
    "InterventionsIn",
    "LIMITS",
    "LayerRequest",
    "ModelChoice",
    "ModelInfo",
    "ModelName",
    "NoInput",
    "NUMBER",
    "PosKind",
    "PositionalKindOut",
    "PositionalOut",
    "PositionalQuery",
    "PredictOut",
    "PredictRequest",
    "Prediction",
    "QKVOut",
    "QKVRequest",
    "LoadingModel",
    "RefusedModel",
    "SamplingOut",
    "ShownPosKind",
    "StackName",
    "StageInfo",
    "StageName",
    "TensorOut",
    "Text",
    "TextInput",
    "TokenOut",
    "VocabToken",
    "TokenizeOut",
    "TokenizeRequest",
    "TraceOut",
    "TraceRequest",
    "WeightInfo",
]
