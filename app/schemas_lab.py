"""Requests and responses of the lab endpoints (/api/lab/*): the textbook's claims, measured.

Tensors are the same `{name, dims, shape, dtype, data}` as everywhere in the API (app/schemas.py).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from app.schemas import INTEGER, NUMBER, Encoding, Float, Int, ModelChoice, TensorOut, TextInput, TokenOut

POWERS_OF_TWO = [4, 8, 16, 32, 64, 128, 256, 512, 1024]


# ---------------------------------------------------------------- requests


class ScalingLabRequest(TextInput):
    """Why ÷√d_k: Var(q·k) grows with d_k, and an unscaled softmax saturates."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {}, {"d_k": [64, 512], "samples": 4096, "seed": 0},
        {"model": "tiny-gpt", "text": "我爱北京天安门广场。", "layer": 0},
    ]})

    text: str = Field("", description="With a model: that model's real scores on this text, per head. "
                                      "Empty: random vectors only.")
    d_k: list[Int] = Field(default_factory=lambda: list(POWERS_OF_TWO), min_length=1, max_length=12,
                           description="Key widths to measure, each 1 to 1024.")
    samples: Int = Field(4096, ge=16, le=8192, description="Random (q, k) pairs per d_k.")
    n_keys: Int = Field(32, ge=2, le=1024, description="Keys per softmax row.")
    rows: Int = Field(256, ge=1, le=1024, description="Softmax rows averaged per d_k.")
    seed: Int = Field(0, ge=0, le=2**31 - 1)
    layer: Int = Field(0, ge=0, description="The model's layer whose heads are measured.")


class MasksLabRequest(TextInput):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"model": "tiny-gpt", "text": "我爱北京天安门广场。", "window": 3, "layer": 0},
    ]})

    window: Int = Field(3, ge=1, le=4096, description="Sliding window: a query sees keys fewer than W away.")
    shorter: Annotated[int, Field(ge=1, le=4096), INTEGER] | None = Field(
        None, description="Tokens of the shorter sentence in the padded "
                                                                 "batch (default: half of the sentence).")
    layer: Int = Field(0, ge=0, description="The layer whose pattern is shown under each mask.")
    encoding: Encoding = "list"


class PositionsLabRequest(ModelChoice):
    """Positional schemes on their own (no model) or at a model's sizes; `length` may pass its n_ctx."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"length": 32, "d_model": 64, "n_heads": 4},
        {"model": "tiny-gpt", "length": 64, "pair": 0},
    ]})

    length: Int = Field(32, ge=2, le=1024, description="Positions to compute (past the model's n_ctx too).")
    d_model: Annotated[int, Field(ge=2, le=1024), INTEGER] | None = Field(
        None, description="Default: the model's, else 64.")
    n_heads: Annotated[int, Field(ge=1, le=16), INTEGER] | None = Field(
        None, description="Default: the model's, else 4.")
    base: Annotated[float, Field(gt=1, le=1e7), NUMBER] | None = Field(
        None, description="RoPE base (theta). Default: the model's, else 10000.")
    pair: Int = Field(0, ge=0, le=512, description="The RoPE dimension pair (i, i + d_head/2) to draw.")
    seed: Int = Field(0, ge=0, le=2**31 - 1, description="Seed of the random q, k for the RoPE scores.")
    encoding: Encoding = "list"


class ParametersLabRequest(ModelChoice):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"model": "tiny-gpt"}, {"config": {"d_model": 512, "n_heads": 8, "n_layers": 6}},
    ]})


class SamplingLabRequest(TextInput):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"model": "tiny-gpt", "text": "The cat sat on the", "temperature": 0.8, "top_k": 20, "top_p": 0.9,
         "seed": 0, "draws": 20},
    ]})

    temperature: Float = Field(1.0, ge=0.01, le=10, description="Below 0.01 the softmax is an argmax in float32.")
    top_k: Annotated[int, Field(ge=1, le=100000), INTEGER] | None = Field(
        None, description="Keep the k most likely tokens (None: all).")
    top_p: Annotated[float, Field(gt=0, le=1), NUMBER] | None = Field(
        None, description="Then keep the smallest set whose mass reaches p.")
    seed: Int = Field(0, ge=0, le=2**31 - 1, description="Same seed, same draws.")
    draws: Int = Field(20, ge=1, le=10000, description="Independent draws of the next token.")
    show: Int = Field(20, ge=1, le=100, description="Rows of the table: the most likely tokens.")


# ---------------------------------------------------------------- responses


class HeadStats(BaseModel):
    layer: int
    d_head: int
    stack: str | None
    var_raw: list[float] = Field(description="Variance of Q·Kᵀ over the visible cells, per head.")
    var_scaled: list[float] = Field(description="Variance of Q·Kᵀ/√d_head, per head.")
    max_scaled: list[float]
    max_unscaled: list[float]
    entropy_scaled: list[float]
    entropy_unscaled: list[float]
    entropy_uniform: list[float] = Field(description="Mean ln(visible keys): a row spread evenly.")


class ScalingLabOut(BaseModel):
    d_k: list[int]
    samples: int
    n_keys: int
    variance: list[float] = Field(description="Measured Var(q·k) for unit-variance q, k: ≈ d_k.")
    scaled_variance: list[float] = Field(description="Var(q·k/√d_k): ≈ 1.")
    max_scaled: list[float]
    max_unscaled: list[float]
    entropy_scaled: list[float]
    entropy_unscaled: list[float]
    entropy_uniform: float = Field(description="ln(n_keys): the entropy of an even row.")
    model: str | None = None
    tokens: list[TokenOut] | None = None
    heads: HeadStats | None = None


class MaskOut(BaseModel):
    mask: list[Any] = Field(description="1: the query may see the key. [q_pos, k_pos], or [row, q_pos, k_pos].")
    pattern: TensorOut | None = Field(None, description="The model's pattern at `layer` under this mask.")


class MasksLabOut(BaseModel):
    model: str
    tokens: list[TokenOut]
    target_tokens: list[TokenOut] | None = None
    layer: int
    stack: str | None
    window: int
    shorter: int
    model_mask: str = Field(description="The mask the model was trained with: causal, bidirectional or sliding.")
    masks: dict[str, MaskOut]


class PositionsLabOut(BaseModel):
    model: str | None
    kind: str | None = Field(description="The model's own positional encoding, if a model was given.")
    n_ctx: int | None
    length: int
    beyond_context: bool = Field(description="length > n_ctx: only the formulas (sinusoidal, RoPE, ALiBi) go there.")
    d_model: int
    n_heads: int
    d_head: int
    base: float
    pair: int
    sinusoidal: dict[str, Any]
    rope: dict[str, Any]
    alibi: dict[str, Any]
    learned: dict[str, Any] | None


class ParametersLabOut(BaseModel):
    model: str
    config: dict[str, Any]
    counts: dict[str, int]
    state_dict_total: int
    ffn_share: float
    ffn_share_of_blocks: float
    head_splits: list[dict[str, int]]
    kv_sharing: list[dict[str, Any]]


class SampleRow(BaseModel):
    id: int
    text: str
    logit: float
    original: float
    tempered: float
    top_k: float
    final: float


class SamplingLabOut(BaseModel):
    model: str
    tokens: list[TokenOut]
    temperature: float
    top_k: int | None
    top_p: float | None
    seed: int
    rows: list[SampleRow]
    kept: dict[str, int] = Field(description="Tokens left with a non-zero probability after each step.")
    entropy: dict[str, float]
    draws: list[int]
    draw_text: list[str]
    counts: dict[str, int] = Field(description="How often each drawn id came up.")
