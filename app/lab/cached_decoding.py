"""Greedy decoding with a KV cache: the cache growing step by step (bytes measured and by formula),
the attention scores computed against recomputing every step, and each step's logits against a full
recomputation. On a hybrid (Qwen3.5), the gated DeltaNet layers' fixed state is cached and counted beside the
attention layers' growing K and V: its bytes, and its work per token (3·d_key·d_value per value head).

POST /api/lab/cached-decoding: greedy decoding with a KV cache, each step against a full recomputation
(lab/cached_decoding.py). Its old name and route: generate, POST /api/lab/generate (deprecated)."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from app.lab.common import Experiment, StackTokensOut, summary_of
from app.pipeline import Build, Context, Run
from app.request_checks import check_generative
from app.schemas import Int, TextInput, VocabToken
from app.tokenizing import tokens_out, vocab_token
from lab.cached_decoding import CachedDecoding, cached_decoding
from lab.kv_cache_size import state_bytes
from model.config import TransformerConfig


class CachedDecodingLabRequest(TextInput):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"model": "tiny-gpt", "text": "我爱北京", "max_new_tokens": 12},
    ]})

    max_new_tokens: Int = Field(12, ge=1, le=64, description="Greedy steps (fewer when the context is full).")


class CachedDecodingStep(VocabToken):  # its token
    step: int
    fed: int = Field(description="Tokens this step's forward pass read: the prompt, then 1.")
    cache_positions: int = Field(description="Positions in the cache after this step.")
    cache_bytes: int = Field(description="Bytes the cache's K and V tensors hold (measured).")
    formula_bytes: int = Field(description=(
        "2·layers·kv_heads·d_head·bytes·positions (layers: the attention layers), plus a hybrid's DeltaNet states."))
    cached_cells: int = Field(description=(
        "Attention scores computed so far with the cache (cumulative; attention layers only)."))
    recomputed_cells: int = Field(description="... and without it: each step scores the whole sequence again.")
    state_cells: int | None = Field(None, description=(
        "Only for a hybrid: DeltaNet state cells computed so far with the cache (cumulative): each token the "
        "layers' recurrence read, times value_heads · 3 · d_key · d_value per DeltaNet layer."))
    recomputed_state_cells: int | None = Field(None, description=(
        "Only for a hybrid: ... and without it: each step runs the recurrence over the whole sequence again."))
    max_diff: float = Field(description="max |cached logits − full recomputation's logits| at this step.")
    top_ids: list[int] = Field(description="The cached step's 5 highest logits' ids ...")
    top_logits: list[float] = Field(description="... and values (full precision).")


class CachedDecodingLabOut(StackTokensOut):
    layers: int
    kv_heads: int
    d_head: int
    bytes_per_value: int
    dtype: str = Field(description=(
        "How the model here stores each cached number (float32 on a CPU): the cache's bytes follow from it. "
        "The KV-cache experiment's default, float16, is what GPUs usually keep."))
    steps: list[CachedDecodingStep]
    text: str = Field(description="The new tokens, joined.")
    saved_fraction: float = Field(description="1 − cached / recomputed score cells.")
    deltanet_layers: int | None = Field(None, description=(
        "Only for a hybrid: its gated DeltaNet layers, which cache a fixed state instead of K and V (`layers` counts "
        "the attention layers)."))
    state_bytes: int | None = Field(None, description=(
        "Only for a hybrid: the DeltaNet layers' state and convolution inputs in the cache, the same at every step."))
    state_cells_per_token: int | None = Field(None, description=(
        "Only for a hybrid: Σ over DeltaNet layers of value_heads · 3 · d_key · d_value (S·k, the update, S·q)."))
    value_heads: int | None = Field(None, description="Only for a hybrid: a DeltaNet layer's value heads.")
    d_key: int | None = Field(None, description="Only for a hybrid: a DeltaNet head's key width.")
    d_value: int | None = Field(None, description="Only for a hybrid: a DeltaNet head's value width.")


def hybrid_fields(cfg: TransformerConfig, decoded: CachedDecoding) -> dict[str, Any]:
    """What a hybrid's answer adds: its DeltaNet layers, their fixed state's bytes and work per token."""
    return {"deltanet_layers": decoded.shape.deltanet_layers,
            "state_bytes": state_bytes(decoded.shape, decoded.dtype),
            "state_cells_per_token": decoded.state_cells_per_token, "value_heads": cfg.deltanet_value_heads,
            "d_key": cfg.deltanet_key_dim, "d_value": cfg.deltanet_value_dim}


def plan(context: Context, request: CachedDecodingLabRequest) -> Build:
    resolved = context.model
    check_generative(resolved)

    def build(run: Run) -> dict[str, Any]:
        inputs = run.inputs
        target = inputs.target_tokens  # an encoder-decoder's decoder input (None: a decoder, one stack)
        decoded = cached_decoding(resolved.model, resolved.name, [t.id for t in inputs.tokens],
                                  None if target is None else [t.id for t in target], request.max_new_tokens)
        steps = [{"step": s["step"], **vocab_token(resolved.loaded, s["id"]),
                  **{k: v for k, v in s.items() if k not in ("step", "id")}} for s in decoded.steps]
        shape = decoded.shape
        return {
            "model": resolved.name, "tokens": tokens_out(target or inputs.tokens),
            "stack": None if target is None else "decoder",
            "layers": shape.layers, "kv_heads": shape.kv_heads, "d_head": shape.d_head,
            "bytes_per_value": decoded.bytes_per_value, "dtype": decoded.dtype,
            "steps": steps, "text": "".join(s["text"] for s in steps),
            "saved_fraction": decoded.saved_fraction,
            **(hybrid_fields(resolved.cfg, decoded) if decoded.state_cells_per_token else {}),
        }

    return build


EXPERIMENT = Experiment(
    name="cached_decoding", method="POST", request=CachedDecodingLabRequest, response=CachedDecodingLabOut,
    plan=plan, refuses=("encoder",), aliases=("generate",), hybrid=True,
    summary=summary_of(__doc__),
)
