"""KV-cache bytes per token and in total for published shapes (GPT-2, GPT-3, Llama-2/3, Mistral, Qwen2.5,
SmolLM2) and every registered model with its own K/V heads beside MHA and MQA:
2 · layers · kv_heads · d_head · bytes · min(context, n_ctx, window) · batch.

GET /api/lab/kv-cache-size: KV-cache bytes for published shapes and every registered model, under MHA, GQA and
MQA. Its old name and route: kv_cache, GET /api/lab/kv-cache (deprecated)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from app.lab.common import Experiment, summary_of
from app.pipeline import Build, Context, Run
from lab import kv_cache_size

CacheDType = Literal["float32", "float16", "bfloat16", "int8", "fp8"]


class KVCacheSizeQuery(BaseModel):
    """GET /api/lab/kv-cache-size's query: how long a context, how many sequences, how many bytes per value."""

    context: int | None = Field(None, ge=1, le=1_048_576, description=(
        "Tokens held per sequence. Omitted: each model's own context. A model never holds more than its context "
        "(n_ctx) or, with a sliding window on every layer, its window: `cached_positions` says what is held."))
    batch: int = Field(1, ge=1, le=1024, description="Sequences decoded together.")
    dtype: CacheDType = Field("float16", description="How each cached number is stored.")


class KVShapeRow(BaseModel):
    name: str
    attention: str
    layers: int
    q_heads: int
    kv_heads: int
    d_head: int
    context: int = Field(description="The longest sequence the model reads (n_ctx / max_position_embeddings).")
    sliding_window: int | None
    cached_positions: int = Field(description="min(context asked, the model's context, its window).")
    bytes_per_token: int
    total_bytes: int
    note: str = Field(description="Where the shape comes from (published rows) or what the row is.")
    local_layers: int | None = Field(None, description=(
        "Only for a model with a window on some layers (Gemma's local layers): how many keep just the window; "
        "`cached_positions` is then what each other layer keeps."))
    local_positions: int | None = Field(None, description="What each local layer keeps: min(positions, window).")
    deltanet_layers: int | None = Field(None, description=(
        "Only for a hybrid (Qwen3.5): its gated DeltaNet layers, which keep no K and V (`layers` counts the "
        "attention layers only)."))
    state_bytes: int | None = Field(None, description=(
        "Only for a hybrid: the DeltaNet layers' fixed states (heads · d_value · d_key, and the convolution's last "
        "inputs) for the batch, the same at every context; included in total_bytes."))


class KVModelRows(BaseModel):
    model: str
    architecture: str
    decodes: bool = Field(description="False for an encoder: it reads the text at once and keeps no cache.")
    own: str = Field(description="The attention the model itself uses: MHA, GQA or MQA.")
    variants: list[KVShapeRow] = Field(description=(
        "The model's own attention with its real K/V heads, beside MHA and MQA of the same shape (and GQA with 8 "
        "or the largest divisor when the model is MHA). Empty for an encoder, which keeps no cache."))
    note: str = Field(description="Why an encoder has no rows; empty otherwise.")


class KVCacheSizeLabOut(BaseModel):
    context: int | None
    batch: int
    dtype: str
    bytes_per_value: int
    formula: str
    published: list[KVShapeRow]
    models: list[KVModelRows]


NO_CACHE = ("An encoder reads the whole text in one pass and generates nothing, so it keeps no KV cache: "
            "there is nothing to show.")


def plan(context: Context, query: KVCacheSizeQuery) -> Build:
    def build(_: Run) -> dict[str, Any]:
        every = [(r.name, r.cfg) for r in context.every_model]
        models = kv_cache_size.model_caches(every, context=query.context, batch=query.batch, dtype=query.dtype)
        published = kv_cache_size.kv_cache_table(list(kv_cache_size.PUBLISHED), context=query.context,
                                                 batch=query.batch, dtype=query.dtype)
        return {"context": query.context, "batch": query.batch, "dtype": query.dtype,
                "bytes_per_value": kv_cache_size.dtype_bytes(query.dtype),
                "formula": "2 · layers · kv_heads · d_head · bytes · min(context, n_ctx, window) · batch",
                "published": published,
                "models": [{"model": m.name, "architecture": m.architecture, "decodes": m.decodes, "own": m.own,
                            "variants": m.variants, "note": "" if m.decodes else NO_CACHE} for m in models]}

    return build


EXPERIMENT = Experiment(
    name="kv_cache_size", method="GET", request=KVCacheSizeQuery, response=KVCacheSizeLabOut,
    plan=plan, aliases=("kvcache", "kv_cache"), uses="every_model", hybrid=True,
    summary=summary_of(__doc__),
)
