"""The layer's real q and k (after RoPE; GQA's K heads repeated), heads side by side, cut again into
h heads of d_k = width / h for every h dividing the width: each head's score-table rank against
its bound min(tokens, d_k), and the mean row entropy. A re-split, not a model trained with h heads.

POST /api/lab/head-count: one layer's real q and k re-split into h heads of d_k = width / h, every h that fits."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from app import errors
from app.lab.common import AttentionLayerInput, Experiment, QueryKeyOut, refuse_unreproduced, summary_of
from app.pipeline import Build, Context, Run
from app.request_checks import attention_layer
from app.tokenizing import tokens_out
from lab.head_count import (
    MAX_RANK_WORK,
    PUBLISHED,
    RTOL,
    layer_qk,
    own_split_diff,
    rank_work,
    splits,
    uniform_entropy,
)


class HeadCountLabRequest(AttentionLayerInput):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"model": "tiny-gpt", "text": "The animal didn't cross the street because it was too tired", "layer": 0},
    ]})



class SplitOut(BaseModel):
    heads: int
    d_k: int
    bound: int = Field(description="min(q_pos, k_pos, d_k): the largest rank a head's score table can have.")
    ranks: list[int] = Field(description="[head] numerical rank of q_h·k_hᵀ (relative tolerance `rtol`).")
    min_rank: int
    mean_rank: float
    entropy: float = Field(description="Mean row entropy of softmax(q_h·k_hᵀ/√d_k + the model's mask), nats.")


class PublishedOut(BaseModel):
    name: str
    d_model: int
    n_heads: int
    d_head: int


class HeadCountLabOut(QueryKeyOut):
    cross: bool
    width: int = Field(description="heads · d_head: the concatenated q (and k) that is re-split.")
    model_heads: int
    model_d_head: int
    kv_heads: int
    rotated: bool = Field(description="q and k are taken after RoPE (the vectors the model dots).")
    alibi: bool = Field(description="The model adds ALiBi's per-head bias; the re-split heads leave it out.")
    rtol: float
    uniform_entropy: float = Field(description="ln(keys visible) averaged over rows: the most any row can have.")
    own_split_diff: float = Field(description="max |re-split at the model's own h − its traced q·k|.")
    splits: list[SplitOut]
    published: list[PublishedOut] = Field(description="Published configurations (not measured here).")


def plan(context: Context, request: HeadCountLabRequest) -> Build:
    resolved = context.model
    cfg = resolved.cfg
    refuse_unreproduced(resolved, "The head-count comparison")
    where = attention_layer(resolved, request.layer, request.stack, request.cross)
    stack = where.stack
    width = cfg.n_heads * cfg.d_head

    def build(run: Run) -> dict[str, Any]:
        inputs = run.inputs
        queries = inputs.target_tokens if stack == "decoder" else inputs.tokens
        keys = inputs.tokens if request.cross else queries
        q_pos, k_pos = len(queries or []), len(keys or [])
        work = rank_work(width, q_pos, k_pos)
        if work > MAX_RANK_WORK:
            raise errors.too_much_work("text", work, MAX_RANK_WORK,
                                       "units of work finding ranks (they grow with the sentence's length)")
        qk = layer_qk(run.trace().trace, where)
        found = splits(qk)
        return {
            "model": resolved.name, "query_tokens": tokens_out(queries), "key_tokens": tokens_out(keys),
            "stack": stack, "layer": request.layer, "cross": request.cross, "width": width,
            "model_heads": cfg.n_heads, "model_d_head": cfg.d_head, "kv_heads": cfg.kv_heads,
            "rotated": qk.rotated, "alibi": cfg.positional.where == "scores" and not request.cross, "rtol": RTOL,
            "uniform_entropy": round(uniform_entropy(qk.allowed), 6), "own_split_diff": own_split_diff(qk),
            "splits": [{"heads": s.heads, "d_k": s.d_k, "bound": s.bound, "ranks": s.ranks,
                        "min_rank": min(s.ranks), "mean_rank": round(sum(s.ranks) / len(s.ranks), 4),
                        "entropy": round(s.entropy, 6)} for s in found],
            "published": list(PUBLISHED),
        }

    return build


EXPERIMENT = Experiment(
    name="head_count", method="POST", request=HeadCountLabRequest, response=HeadCountLabOut,
    plan=plan, aliases=("headcount",),
    summary=summary_of(__doc__),
)
