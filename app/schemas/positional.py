"""Positional encodings: the kinds (from the one registry, model/positional.py) and GET /api/positional-encoding."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from app.schemas.fields import DType, Encoding
from app.schemas.outputs import TensorOut
from model.positional import KINDS

# the kinds come from the one registry (model/positional.py); Literal of a tuple lists each name in the schema
if TYPE_CHECKING:  # a Literal built at run time is no type to mypy
    PosKind = str
    ShownPosKind = str
else:
    PosKind = Literal[tuple(KINDS)]
    ShownPosKind = Literal[tuple(k for k, kind in KINDS.items() if kind.where != "nowhere")]


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


class PositionalOut(BaseModel):
    kind: str
    model: str | None
    length: int
    d_model: int
    n_heads: int
    d_head: int
    base: float | None
    tensors: dict[str, TensorOut]
