"""GET /api/health and /api/models: what the server offers, and each model's description."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


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
