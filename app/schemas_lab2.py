"""Requests and responses of Lab II (/api/lab/*): what attention costs and what the model really uses.

complexity · flash · kv-cache · generate · norm-placement · logit-lens · ablation. Every limit a
field has is stated here; the limits that depend on several fields together (work, memory) are
checked by the answers before any work and refused with `too_much_work` naming the field.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.schemas import INTEGER, Bool, Encoding, Float, Int, StackName, TensorOut, TextInput, TokenOut

Length = Annotated[int, Field(ge=1, le=4096), INTEGER]
CacheDType = Literal["float32", "float16", "bfloat16", "int8", "fp8"]


# ---------------------------------------------------------------- requests


class ComplexityLabRequest(BaseModel):
    """Time and peak memory of naive against tiled attention on random q, k, v, and the n² fits."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"lengths": [64, 128, 256, 512, 1024, 2048]}, {"lengths": [256, 1024, 4096], "d_model": 64, "n_heads": 1},
    ]})

    lengths: list[Length] = Field(default_factory=lambda: [64, 128, 256, 512, 1024, 2048], min_length=1,
                                  max_length=12, description="Sequence lengths, each 1 to 4096.")
    d_model: Int = Field(64, ge=1, le=1024, description="Split into n_heads heads of d_model / n_heads (≤ 256).")
    n_heads: Int = Field(1, ge=1, le=16)
    block: Int = Field(128, ge=16, le=4096, description="Tile size of the tiled version (block_q = block_k).")
    causal: Bool = Field(True, description="A decoder's mask: the tiled version skips tiles wholly in the future.")


class FlashLabRequest(TextInput):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"model": "tiny-gpt", "text": "我爱北京天安门广场。", "layer": 0, "head": 0, "block_q": 4, "block_k": 4},
    ]})

    layer: Int = Field(0, ge=0, le=64)
    head: Int = Field(0, ge=0, le=64)
    block_q: Int = Field(4, ge=1, le=128, description="Query rows per tile.")
    block_k: Int = Field(4, ge=1, le=128, description="Keys per tile.")
    stack: StackName | None = Field(None, description="Encoder-decoder only: 'encoder' (default) or 'decoder'.")
    cross: Bool = Field(False, description="The decoder's cross-attention (encoder-decoder only).")
    encoding: Encoding = Field("list", description="'base64': the output and hook_z at full float32 precision.")


class KVCacheQuery(BaseModel):
    """GET /api/lab/kv-cache's query: how long a context, how many sequences, how many bytes per value."""

    context: int = Field(4096, ge=1, le=1_048_576, description="Tokens held per sequence.")
    batch: int = Field(1, ge=1, le=1024, description="Sequences decoded together.")
    dtype: CacheDType = Field("float16", description="How each cached number is stored.")


class GenerateLabRequest(TextInput):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"model": "tiny-gpt", "text": "我爱北京", "max_new_tokens": 12},
    ]})

    max_new_tokens: Int = Field(12, ge=1, le=64, description="Greedy steps (fewer when the context is full).")


class NormPlacementLabRequest(BaseModel):
    """Two models from one seed that differ only in where the norm sits (trained here, so bounded and cached)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"n_layers": 12, "d_model": 64, "seed": 0}, {"n_layers": 6, "d_model": 64, "steps": 0, "seed": 1},
    ]})

    n_layers: Int = Field(12, ge=1, le=24)
    d_model: Int = Field(64, ge=8, le=256)
    n_heads: Int = Field(4, ge=1, le=16, description="Must divide d_model.")
    steps: Int = Field(8, ge=0, le=500, description="Adam steps at a constant learning rate, no warm-up.")
    batch: Int = Field(8, ge=1, le=64, description="Windows of text per step.")
    seq_len: Int = Field(64, ge=8, le=256, description="Bytes per window.")
    lr: Float = Field(1e-3, gt=0, le=0.1, description="Learning rate (the same for both).")
    seed: Int = Field(0, ge=0, le=2**31 - 1, description="Same seed, same weights, batches and numbers.")


class LogitLensLabRequest(TextInput):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"model": "tiny-gpt", "text": "我爱北京天安门广场。", "k": 5},
    ]})

    k: Int = Field(5, ge=1, le=20, description="Most likely next tokens shown after each block.")


class AblationLabRequest(TextInput):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"model": "tiny-gpt", "text": "我爱北京天安门广场。"}, {"model": "tiny-gpt", "text": "我爱北京", "position": 2},
    ]})

    position: Annotated[int, Field(ge=0, le=4096), INTEGER] | None = Field(
        None, description="The query position whose attention and next token are followed (default: the last).")


# ---------------------------------------------------------------- responses


class FitOut(BaseModel):
    exponent: float = Field(description="b in y = a·n^b (least squares on log-log axes): 2 for quadratic cost.")
    coefficient: float
    quadratic_coefficient: float = Field(description="c in y ≈ c·n² (least squares through the origin).")
    r_squared: float = Field(description="Of the c·n² fit.")


class MeasurementOut(BaseModel):
    n: int
    naive_seconds: float | None = Field(description="None: skipped, it would have overrun the time budget.")
    tiled_seconds: float | None
    naive_peak_bytes: int
    tiled_peak_bytes: int
    n_squared_bytes: int


class ComplexityLabOut(BaseModel):
    device: str
    memory_source: str = Field(description="'cuda allocator' (measured) or 'counted' (the intermediates held).")
    d_head: int
    n_heads: int
    block: int
    causal: bool
    budget_seconds: float
    measurements: list[MeasurementOut]
    naive_fit: FitOut | None
    tiled_fit: FitOut | None
    naive_memory_fit: FitOut | None
    tiled_memory_fit: FitOut | None


class TileOut(BaseModel):
    q_block: int
    k_block: int
    q_range: list[int]
    k_range: list[int]
    m: list[float | None] = Field(description="Running max per query row (None: no visible key yet, −∞).")
    l: list[float] = Field(description="Running Σ exp(score − m) per query row.")  # noqa: E741
    acc: list[list[float]] = Field(description="Σ exp(score − m)·v [block_q, d_head]; acc / l: the output so far.")


class FlashLabOut(BaseModel):
    model: str
    tokens: list[TokenOut]
    query_tokens: list[TokenOut]
    key_tokens: list[TokenOut]
    stack: str | None
    layer: int
    head: int
    kv_head: int
    d_head: int
    causal: bool
    window: int | None
    alibi_slope: float | None
    block_q: int
    block_k: int
    q_tiles: int
    k_tiles: int
    computed_tiles: int
    skipped_tiles: int = Field(description="Tiles wholly hidden by the mask: never computed.")
    largest_bytes: int = Field(description="The largest tensor the tiled run ever held.")
    n_squared_bytes: int = Field(description="What the q_pos × k_pos score matrix would take.")
    tiles: list[TileOut]
    output: TensorOut = Field(description="The tiled result [q_pos, d_head].")
    hook_z: TensorOut = Field(description="The model's own output of this head [q_pos, d_head].")
    max_diff_z: float = Field(description="max |output − hook_z|.")
    max_diff_naive: float = Field(description="max |output − naive softmax(QKᵀ)V|.")


class KVShapeRow(BaseModel):
    name: str
    attention: str
    layers: int
    q_heads: int
    kv_heads: int
    d_head: int
    sliding_window: int | None
    cached_positions: int
    bytes_per_token: int
    total_bytes: int
    note: str


class KVModelRows(BaseModel):
    model: str
    architecture: str
    decodes: bool = Field(description="False for an encoder: it reads the text at once and keeps no cache.")
    own: str = Field(description="The attention the model itself uses: MHA, GQA or MQA.")
    variants: list[KVShapeRow]


class KVCacheLabOut(BaseModel):
    context: int
    batch: int
    dtype: str
    bytes_per_value: int
    formula: str
    published: list[KVShapeRow]
    models: list[KVModelRows]


class GenerateStep(BaseModel):
    step: int
    id: int
    text: str
    fed: int = Field(description="Tokens this step's forward pass read: the prompt, then 1.")
    cache_positions: int = Field(description="Positions in the cache after this step.")
    cache_bytes: int = Field(description="Bytes the cache's K and V tensors hold (measured).")
    formula_bytes: int = Field(description="2·layers·kv_heads·d_head·bytes·positions.")
    cached_cells: int = Field(description="Attention scores computed so far with the cache (cumulative).")
    recomputed_cells: int = Field(description="... and without it: each step scores the whole sequence again.")
    max_diff: float = Field(description="max |cached logits − full recomputation's logits| at this step.")
    top_ids: list[int] = Field(description="The cached step's 5 highest logits' ids ...")
    top_logits: list[float] = Field(description="... and values (full precision).")


class GenerateLabOut(BaseModel):
    model: str
    tokens: list[TokenOut]
    stack: str | None
    layers: int
    kv_heads: int
    d_head: int
    bytes_per_value: int
    steps: list[GenerateStep]
    text: str = Field(description="The new tokens, joined.")
    saved_fraction: float = Field(description="1 − cached / recomputed score cells.")


class PlacementOut(BaseModel):
    placement: str
    ffn_out_grad_norms: list[float] = Field(description="‖∂L/∂W_out‖ of each block's FFN at init, input to output.")
    block_grad_norms: list[float] = Field(description="‖∂L/∂θ‖ over each block's weights at init.")
    growth: float | None = Field(description="Mean FFN gradient norm of the top third of blocks / the bottom third.")
    losses: list[float]


class NormPlacementLabOut(BaseModel):
    settings: dict[str, Any]
    pre: PlacementOut
    post: PlacementOut
    source: str = Field(description="What the batches were read from.")


class LensCell(BaseModel):
    ids: list[int]
    texts: list[str]
    probs: list[float]


class LogitLensLabOut(BaseModel):
    model: str
    tokens: list[TokenOut] = Field(description="What the LM stack read (an encoder-decoder: its decoder input).")
    layers: list[str] = Field(description="'embed', then after block 0, 1, ...")
    top: list[list[LensCell]] = Field(description="[layer][position]: the k most likely next tokens.")
    next_token_probs: list[list[float]] | None = Field(description="[layer][position]: of the token that follows.")
    max_diff_last: float = Field(description="max |last layer's lens logits − the model's logits|.")


class HeadEffectOut(BaseModel):
    layer: int
    head: int
    weights: list[float]
    max_weight: float
    loss: float | None
    loss_change: float | None
    prob: float
    prob_change: float


class AblationLabOut(BaseModel):
    model: str
    tokens: list[TokenOut]
    position: int
    chosen_id: int
    chosen_text: str
    clean_loss: float | None
    clean_prob: float
    none_ablated: dict[str, float | None] = Field(description="The same edit with no head named: loss and prob change.")
    heads: list[HeadEffectOut]
