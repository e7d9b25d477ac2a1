"""POST /api/attention and /api/qkv: one attention layer of one stack, for one head or all."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from app.schemas.fields import Bool, DType, Encoding, Int, StackName
from app.schemas.inputs import Intervenable
from app.schemas.outputs import TensorOut, TokenOut


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
