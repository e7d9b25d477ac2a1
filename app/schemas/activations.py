"""POST /api/activations: the norms, the FFN and the residual stream of a layer or of every layer."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from app.schemas.fields import DType, Encoding, Int, StackName
from app.schemas.inputs import Intervenable
from app.schemas.outputs import TensorOut, TokenOut


class ActivationsRequest(Intervenable):
    model_config = ConfigDict(json_schema_extra={"examples": [
        {"model": "tiny-gpt", "text": "The cat sat on the mat.", "layer": 1},
        {"model": "tiny-gpt", "text": "The cat sat on the mat."},
    ]})

    layer: Int | None = Field(None, description="One layer, or all layers when omitted.")
    stack: StackName | None = None
    encoding: Encoding = "list"
    dtype: DType = "float32"


class ActivationsOut(BaseModel):
    model: str
    stack: str | None
    layers: list[int]
    tokens: list[TokenOut]
    stages: dict[str, TensorOut]
    norms: dict[str, TensorOut] = Field(description="Per-position L2 norm of each residual-stream stage.")
