"""Greedy decoding with a KV cache, each step checked against recomputing the whole sequence.

The loop is model/generate.py's (the one decoding loop); this experiment only watches it
(`on_step`): the cache growing (bytes measured and by formula), the attention scores computed
with the cache against without it, and each step's logits against a full recomputation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from lab import kv_cache_size
from model.device import one_row
from model.generate import Step, generate, next_token_logits
from model.transformer import Transformer

TORCH_DTYPES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}
TOP = 5  # logits listed per step


@dataclass(frozen=True)
class CachedDecoding:
    steps: list[dict[str, Any]]  # per step: id, fed, cache sizes, score cells, max_diff, top ids and logits
    shape: kv_cache_size.CacheShape
    bytes_per_value: int
    dtype: str  # how the model (and so its cache) stores each number here: float32 on a CPU
    saved_fraction: float  # 1 - cached / recomputed score cells


@torch.inference_mode()
def cached_decoding(model: Transformer, name: str, ids: Sequence[int], target_ids: Sequence[int] | None,
                    max_new_tokens: int) -> CachedDecoding:
    """Greedy steps from `ids` (decoder) or `target_ids` (encoder-decoder: the source `ids` stay fixed)."""
    cfg = model.cfg
    enc_dec = cfg.architecture == "encoder-decoder"
    device = model.device
    source = one_row(ids, device)  # [1, pos]
    prompt_len = len(target_ids) if enc_dec and target_ids is not None else len(ids)
    shape = kv_cache_size.shape_of(name, cfg)
    dtype = TORCH_DTYPES.get(next(model.parameters()).dtype, "float32")
    per_token = kv_cache_size.bytes_per_token(shape, dtype)
    steps: list[dict[str, Any]] = []

    def record(step: Step) -> None:
        assert step.cache is not None  # decoded with a cache: no edits
        cached = step.logits[0].float()  # [d_vocab]
        everything = step.sequences  # [1, pos]
        full = (next_token_logits(model, source, everything) if enc_dec
                else next_token_logits(model, everything))[0].float()  # [d_vocab], recomputed without a cache
        top = cached.topk(min(TOP, cached.shape[-1]))
        steps.append({
            "step": step.index, "id": int(step.tokens[0]), "fed": step.fed, "cache_positions": step.cache.length,
            "cache_bytes": step.cache.nbytes(), "formula_bytes": per_token * step.cache.length,
            "cached_cells": step.cache.score_cells,
            "recomputed_cells": kv_cache_size.recomputed_score_cells(cfg, prompt_len, step.index + 1),
            "max_diff": float((cached - full).abs().max()),
            "top_ids": top.indices.tolist(), "top_logits": top.values.tolist(),
        })

    generate(model, ids, target_ids=target_ids if enc_dec else None, max_new_tokens=max_new_tokens,
             temperature=0.0, on_step=record)
    cached_total: int = steps[-1]["cached_cells"] if steps else 0
    recomputed_total: int = steps[-1]["recomputed_cells"] if steps else 0
    return CachedDecoding(steps, shape, next(model.parameters()).element_size(), dtype,
                          1 - cached_total / recomputed_total if recomputed_total else 0.0)
