"""POST /api/lab/complexity, /flash, /generate and GET /api/lab/kv-cache: what attention costs.

Each `plan_*` / `check_*` refuses too much work before any is done; the numbers come from
lab/complexity.py, lab/flash.py and model/kv_cache.py. This module picks and serializes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import torch

from app import errors
from app.answers import Budget, Builder
from app.answers.predict import check_generative
from app.answers.request_checks import check_heads, check_layer, stack_prefix
from app.inference_pool import TraceRun
from app.resolve import Resolved
from app.schemas_lab2 import ComplexityLabRequest, FlashLabRequest, GenerateLabRequest, KVCacheQuery
from app.tensors import encode_tensor
from app.tokenizing import Inputs, token_text, tokens_out
from lab import kv_cost
from lab.complexity import measure_complexity, naive_peak_bytes
from lab.flash import flash_attention, head_inputs, naive_attention
from model.generate import next_token_logits
from model.kv_cache import KVCache

COMPLEXITY_SECONDS = 5.0  # a length whose predicted time would pass this is skipped, not run
MAX_NAIVE_BYTES = 1 << 30  # the naive scores + softmax at the longest length
MAX_TILE_STEPS = 1 << 14  # Σ over lengths of (n / block)²: the tiled version's Python loop
TORCH_DTYPES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}


# ---------------------------------------------------------------- complexity


def check_complexity(request: ComplexityLabRequest) -> int:
    """d_head, once the sizes split and the work fits."""
    if request.d_model % request.n_heads:
        raise errors.invalid_option("n_heads", f"d_model {request.d_model} does not split into "
                                               f"{request.n_heads} equal heads.")
    d_head = request.d_model // request.n_heads
    if d_head > 256:
        raise errors.invalid_option("d_model", f"d_model / n_heads = {d_head}; at most 256 per head.")
    longest = max(request.lengths)
    held = naive_peak_bytes(longest, request.n_heads, 4)
    if held > MAX_NAIVE_BYTES:
        raise errors.too_much_work("lengths", held, MAX_NAIVE_BYTES,
                                   "bytes of naive scores (2 · n_heads · n² · 4 at the longest length)")
    steps = sum(math.ceil(n / request.block) ** 2 for n in set(request.lengths))
    if steps > MAX_TILE_STEPS:
        raise errors.too_much_work("block", steps, MAX_TILE_STEPS, "tiles (Σ (n / block)² over the lengths)")
    return d_head


def build_complexity(request: ComplexityLabRequest, d_head: int, device: str) -> dict[str, Any]:
    report = measure_complexity(request.lengths, d_head=d_head, n_heads=request.n_heads, block=request.block,
                                causal=request.causal, budget_seconds=COMPLEXITY_SECONDS, device=device)
    out = asdict(report)
    return {**out, "causal": request.causal, "budget_seconds": COMPLEXITY_SECONDS}


# ---------------------------------------------------------------- flash


def _finite(values: torch.Tensor) -> list[float | None]:
    return [float(v) if math.isfinite(v) else None for v in values.tolist()]


def plan_flash(resolved: Resolved, request: FlashLabRequest, budget: Budget) -> Builder:
    cfg = resolved.cfg
    _, stack, n_layers = stack_prefix(resolved, request.stack, request.cross)
    check_layer(request.layer, n_layers)
    check_heads([request.head], cfg.n_heads)

    def build(run: TraceRun) -> dict[str, Any]:
        inputs = head_inputs(resolved.model, run.trace, request.layer, request.head, stack=stack, cross=request.cross)
        n_q, n_k, d_head = inputs.q.shape[0], inputs.k.shape[0], inputs.q.shape[1]
        q_tiles, k_tiles = math.ceil(n_q / request.block_q), math.ceil(n_k / request.block_k)
        cells = q_tiles * k_tiles * request.block_q * (d_head + 2)
        if cells > budget.max_cells:
            raise errors.response_too_large(cells, budget.max_cells)
        result = flash_attention(inputs.q, inputs.k, inputs.v, block_q=request.block_q, block_k=request.block_k,
                                 causal=inputs.causal, scale=inputs.scale, alibi_slope=inputs.alibi_slope,
                                 window=inputs.window)
        naive = naive_attention(inputs.q, inputs.k, inputs.v, causal=inputs.causal, scale=inputs.scale,
                                alibi_slope=inputs.alibi_slope, window=inputs.window)
        tiles = [{"q_block": t.q_block, "k_block": t.k_block, "q_range": list(t.q_range), "k_range": list(t.k_range),
                  "m": _finite(t.m.cpu()), "l": t.l.cpu().tolist(),
                  "acc": [[round(x, 6) for x in row] for row in t.acc.cpu().tolist()]} for t in result.tiles]
        queries = run.target_tokens if stack == "decoder" else run.tokens
        dims = ("q_pos", "d_head")
        return {
            "model": resolved.name, "tokens": tokens_out(run.tokens), "query_tokens": tokens_out(queries),
            "key_tokens": tokens_out(run.tokens if request.cross else queries), "stack": stack,
            "layer": request.layer, "head": request.head, "kv_head": request.head // (cfg.n_heads // cfg.kv_heads),
            "d_head": d_head, "causal": inputs.causal, "window": inputs.window, "alibi_slope": inputs.alibi_slope,
            "block_q": request.block_q, "block_k": request.block_k, "q_tiles": q_tiles, "k_tiles": k_tiles,
            "computed_tiles": result.computed_tiles, "skipped_tiles": result.skipped_tiles,
            "largest_bytes": result.largest_bytes, "n_squared_bytes": result.n_squared_bytes, "tiles": tiles,
            "output": encode_tensor("flash output", result.output.cpu(), dims, request.encoding),
            "hook_z": encode_tensor("hook_z", inputs.z.cpu(), dims, request.encoding),
            "max_diff_z": float((result.output - inputs.z).abs().max()) if n_q else 0.0,
            "max_diff_naive": float((result.output - naive).abs().max()) if n_q else 0.0,
        }

    return build


# ---------------------------------------------------------------- kv cache


def kv_rows(shapes: list[kv_cost.CacheShape], query: KVCacheQuery) -> list[dict[str, object]]:
    return kv_cost.kv_cache_table(shapes, context=query.context, batch=query.batch, dtype=query.dtype)


def build_kv_cache(query: KVCacheQuery, models: list[Resolved]) -> dict[str, Any]:
    described = []
    for resolved in models:
        shape = kv_cost.shape_of(resolved.name, resolved.cfg)
        described.append({"model": resolved.name, "architecture": resolved.cfg.architecture,
                          "decodes": resolved.cfg.architecture != "encoder" and resolved.cfg.lm_head,
                          "own": shape.attention, "variants": kv_rows(list(kv_cost.variants(shape).values()), query)})
    return {"context": query.context, "batch": query.batch, "dtype": query.dtype,
            "bytes_per_value": kv_cost.dtype_bytes(query.dtype),
            "formula": "2 · layers · kv_heads · d_head · bytes · min(context, window) · batch",
            "published": kv_rows(list(kv_cost.PUBLISHED), query), "models": described}


# ---------------------------------------------------------------- generate with a cache


def plan_generate(resolved: Resolved, request: GenerateLabRequest) -> Callable[[Inputs], dict[str, Any]]:
    check_generative(resolved)
    return lambda inputs: build_generate(resolved, request, inputs)


@torch.inference_mode()
def build_generate(resolved: Resolved, request: GenerateLabRequest, inputs: Inputs) -> dict[str, Any]:
    """Greedy decoding with a KV cache, each step checked against a full recomputation."""
    model, cfg = resolved.model, resolved.cfg
    enc_dec = cfg.architecture == "encoder-decoder"
    device = model.device
    source = torch.tensor([[t.id for t in inputs.tokens]], device=device)  # [1, pos]
    read = inputs.target_tokens if enc_dec and inputs.target_tokens is not None else inputs.tokens
    growing = [t.id for t in read]
    prompt_len = len(growing)
    shape = kv_cost.shape_of(resolved.name, cfg)
    value_bytes = next(model.parameters()).element_size()
    per_token = kv_cost.bytes_per_token(shape, TORCH_DTYPES.get(next(model.parameters()).dtype, "float32"))
    cache = KVCache()
    steps: list[dict[str, Any]] = []
    for step in range(request.max_new_tokens):
        if len(growing) >= cfg.n_ctx:
            break
        unseen = torch.tensor([growing[cache.length:]], device=device)  # [1, new pos]
        everything = torch.tensor([growing], device=device)  # [1, pos]
        if enc_dec:
            cached = next_token_logits(model, source, unseen, cache=cache)[0].float()  # [d_vocab]
            full = next_token_logits(model, source, everything)[0].float()
        else:
            cached = next_token_logits(model, unseen, cache=cache)[0].float()
            full = next_token_logits(model, everything)[0].float()
        top = cached.topk(min(5, cached.shape[-1]))
        token = int(top.indices[0])
        steps.append({
            "step": step, "id": token, "text": token_text(resolved.loaded, token), "fed": int(unseen.shape[1]),
            "cache_positions": cache.length, "cache_bytes": cache.nbytes(), "formula_bytes": per_token * cache.length,
            "cached_cells": cache.score_cells,
            "recomputed_cells": kv_cost.recomputed_score_cells(cfg, prompt_len, step + 1),
            "max_diff": float((cached - full).abs().max()),
            "top_ids": top.indices.tolist(), "top_logits": top.values.tolist(),
        })
        growing.append(token)
    cached_total: int = steps[-1]["cached_cells"] if steps else 0
    recomputed_total: int = steps[-1]["recomputed_cells"] if steps else 0
    return {
        "model": resolved.name, "tokens": tokens_out(read), "stack": "decoder" if enc_dec else None,
        "layers": shape.layers, "kv_heads": shape.kv_heads, "d_head": shape.d_head, "bytes_per_value": value_bytes,
        "steps": steps, "text": "".join(s["text"] for s in steps),
        "saved_fraction": 1 - cached_total / recomputed_total if recomputed_total else 0.0,
    }
