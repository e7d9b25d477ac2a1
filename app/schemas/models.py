"""GET /api/health and /api/models: what the server offers, and each model's description."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class RefusedModel(BaseModel):
    name: str = Field(description="The name it would have had (an Ollama tag, an LM Studio file's name, a folder); "
                                   "a working model may hold the same name.")
    source: str = Field(description="Where it was found: weights, package, operator, ollama or lmstudio.")
    reason: str = Field(description="Why it is not offered, in one sentence.")


class LoadingModel(BaseModel):
    name: str = Field(description="A model loading now (a big file takes a minute or more); not offered until done.")
    done: int = Field(description="Tensors loaded so far.")
    total: int = Field(description="Tensors in all.")
    percent: int = Field(description="done / total, in percent.")


class HealthOut(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [
        {"status": "ok", "device": "cpu", "torch": "2.13.0", "models": ["tiny-gpt", "minilm"], "loaded": ["tiny-gpt"],
         "default": "tiny-gpt", "refused": [{"name": "gemma3:1b", "source": "ollama", "reason":
                                             "unsupported architecture general.architecture = 'gemma3'"}]}
    ]})
    status: str
    device: str
    torch: str
    models: list[str]
    loaded: list[str]
    default: str | None = None
    refused: list[RefusedModel] = Field(default_factory=list, description=(
        "Models found but not offered (a store file the loader refuses, a checkpoint that failed to load), each "
        "with why. They have no config, so they are not in GET /api/models."))
    loading: list[LoadingModel] | None = Field(default=None, description=(
        "Models loading now, with how far each is; absent when none is. A request for one waits a little, then "
        "is answered 503 model_loading with the percentage."))


class StageInfo(BaseModel):
    """One trace stage, described by app/stage_descriptions.py: the page builds its stepper from these."""

    name: str
    dims: list[str]
    stack: str | None = Field(description="`encoder` or `decoder` of an encoder-decoder; null for a model's one stack.")
    layer: int | None = Field(description="The block it belongs to; null before and after the blocks.")
    site: str | None = Field(description="Where in the block or stack: attn, cross_attn, mlp, a norm (ln1, ln2, "
                             "ln_cross, ln1_post, ln2_post, ln_embed, ln_final), or null.")
    hook: str = Field(description="What it is within its site: q, pattern, normalized, scale, pre, resid_post, ...")
    step: str | None = Field(description="The explorer's step that shows it, and that step's texts "
                             "(`stages.<step>` in static/text/*.json); null: no step of its own.")
    kind: str | None = Field(description="The panel that draws its step (static/js/panels/<kind>.js).")
    main: bool = Field(description="The step's main tensor in this layer (one per step and layer); else an extra.")


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
