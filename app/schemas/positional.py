"""Positional encodings: the kinds (from the one registry, model/positional.py) and GET /api/positional-encoding."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    Field,
    GetJsonSchemaHandler,
    SerializerFunctionWrapHandler,
    model_serializer,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from app.schemas.fields import DType, Encoding
from app.schemas.outputs import TensorOut
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
    local_base: float | None = Field(
        None, description="RoPE base of the model's local (sliding-window) layers, where it differs from `base`, the "
        "global layers' base (Gemma 3); then `tensors` also holds `local_angles`. Left out for other models.")
    tensors: dict[str, TensorOut]

    @model_serializer(mode="wrap")
    def _without_absent_local_base(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # only a model with local layers has the key, so every other answer reads as before
        data: dict[str, Any] = handler(self)
        if data.get("local_base") is None:
            data.pop("local_base", None)
        return data
