"""POST /api/tokenize and /api/trace: a text's tokens, and any slice of its recorded forward pass."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from app.schemas.fields import DType, Encoding, Int, StageName
from app.schemas.inputs import Intervenable, TextInput
from app.schemas.outputs import TensorOut, TokenOut, VocabToken


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


class TokenizeOut(BaseModel):
    model: str
    tokens: list[TokenOut]
    target_tokens: list[TokenOut] | None = None
    chat_text: str | None = Field(None, description="With `chat`: the text as the chat template wrote it.")


class Prediction(VocabToken):
    prob: float
    logit: float


class TraceOut(BaseModel):
    model: str
    tokens: list[TokenOut]
    target_tokens: list[TokenOut] | None = None
    stages: dict[str, TensorOut]
    top_tokens: list[Prediction] | None = Field(None, description="Next-token guesses at the last position.")
    loss: float | None = Field(None, description="Mean next-token cross-entropy of the text (nats), with `top_k`.")
