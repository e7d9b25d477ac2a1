"""Greedy decoding with a KV cache, each step checked against recomputing the whole sequence.

The loop is model/generate.py's (the one decoding loop); this experiment only watches it
(`on_step`): the cache growing (bytes measured and by formula), the attention scores computed
with the cache against without it, and each step's logits against a full recomputation.

A hybrid (Qwen3.5) caches K and V in its attention layers only. Each gated DeltaNet layer (model/deltanet.py)
keeps its state S [head, d_value, d_key] and the convolution's last kernel − 1 inputs instead, the same size at
every step. Its work per token is fixed: each value head passes over S three times (S·k, the update
S ← c·S + w·kᵀ, the read-out S·q), 3·d_key·d_value multiply-adds, wherever the token stands; without the cache every
step runs the recurrence over the whole sequence again. Those "state cells" are counted beside the attention
layers' score cells (query × key × head), which grow with the position.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from lab import kv_cache_size
from model.config import TransformerConfig
from model.device import one_row
from model.generate import Step, generate, next_token_logits
from model.transformer import Transformer

TORCH_DTYPES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}
TOP = 5  # logits listed per step
STATE_PASSES = 3  # a DeltaNet token passes over its state S three times: S·k, the update, S·q


@dataclass(frozen=True)
class CachedDecoding:
    steps: list[dict[str, Any]]  # per step: id, fed, cache sizes, score (and state) cells, max_diff, top ids, logits
    shape: kv_cache_size.CacheShape
    bytes_per_value: int
    dtype: str  # how the model (and so its cache) stores each number here: float32 on a CPU
    saved_fraction: float  # 1 - cached / recomputed score cells
    attention_layers: int  # the layers that score (a hybrid's DeltaNet layers do not)
    state_cells_per_token: int  # a hybrid's DeltaNet work per token, summed over its layers (0: none)


def state_cells_per_token(cfg: TransformerConfig) -> int:
    """Σ over DeltaNet layers of value_heads · 3 · d_key · d_value: the state cells one token costs there."""
    fixed = len(cfg.deltanet_layers or ())
    return fixed * (cfg.deltanet_value_heads or 0) * STATE_PASSES * (cfg.deltanet_key_dim or 0) * \
        (cfg.deltanet_value_dim or 0)


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
    attention_layers = kv_cache_size.attention_layer_count(cfg)
    per_state_token = state_cells_per_token(cfg)
    per_layer_state = per_state_token // len(cfg.deltanet_layers) if cfg.deltanet_layers else 0
    steps: list[dict[str, Any]] = []
    work = {"cells": 0, "state": 0, "state_recomputed": 0, "seen": 0}

    def record(step: Step) -> None:
        assert step.cache is not None  # decoded with a cache: no edits
        cached = step.logits[0].float()  # [d_vocab]
        everything = step.sequences  # [1, pos]
        full = (next_token_logits(model, source, everything) if enc_dec
                else next_token_logits(model, everything))[0].float()  # [d_vocab], recomputed without a cache
        top = cached.topk(min(TOP, cached.shape[-1]))
        length = step.cache.length
        # this step's new queries × every key so far, per head and attention layer (model.transformer counts the
        # same for a model of attention layers only: KVCache.score_cells)
        work["cells"] += step.fed * length * cfg.n_heads * attention_layers
        # the tokens each DeltaNet layer's recurrence consumed this step, read off its cache entry (`seen`)
        seen = sum(entry.seen for entry in step.cache.self_attn if entry.state is not None)
        work["state"] += (seen - work["seen"]) * per_layer_state
        work["seen"] = seen
        work["state_recomputed"] += length * per_state_token  # without a cache: the whole sequence again
        steps.append({
            "step": step.index, "id": int(step.tokens[0]), "fed": step.fed, "cache_positions": length,
            "cache_bytes": step.cache.nbytes(),
            "formula_bytes": per_token * length + kv_cache_size.state_bytes(shape, dtype),
            "cached_cells": work["cells"],
            "recomputed_cells": kv_cache_size.recomputed_score_cells(cfg, prompt_len, step.index + 1),
            **({"state_cells": work["state"], "recomputed_state_cells": work["state_recomputed"]}
               if per_state_token else {}),
            "max_diff": float((cached - full).abs().max()),
            "top_ids": top.indices.tolist(), "top_logits": top.values.tolist(),
        })

    generate(model, ids, target_ids=target_ids if enc_dec else None, max_new_tokens=max_new_tokens,
             temperature=0.0, on_step=record)
    cached_total: int = steps[-1]["cached_cells"] if steps else 0
    recomputed_total: int = steps[-1]["recomputed_cells"] if steps else 0
    return CachedDecoding(steps, shape, next(model.parameters()).element_size(), dtype,
                          1 - cached_total / recomputed_total if recomputed_total else 0.0,
                          attention_layers, per_state_token)
