"""One head of the model, tile by tile with the online softmax: the running max m, sum l and rescaled
partial output after every tile; the result against the model's own hook_z; the largest tensor held
against the n × n matrix; the bytes moved to and from main memory (HBM) by standard attention and by the
tiled loop, counted as the loop runs and by the paper's formulas over sequence lengths, in `dtype`.

POST /api/lab/flash: one head of the model tile by tile with the online softmax (lab/flash.py's flash_for_head)."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app import errors
from app.lab.common import AttentionHeadInput, Experiment, HeadOut, refuse_unreproduced, summary_of
from app.pipeline import Build, Context, Run
from app.request_checks import attention_layer
from app.schemas import Encoding, Int, TensorOut, TokenOut
from app.tensors import encode_tensor
from app.tokenizing import tokens_out
from lab.flash import (
    differences,
    flash_for_head,
    flash_traffic,
    memory_crossover,
    standard_traffic,
    traffic_curves,
)
from model.device import one_row

BYTES_PER_NUMBER = {"float32": 4, "float16": 2, "bfloat16": 2}


class FlashLabRequest(AttentionHeadInput):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"model": "tiny-gpt", "text": "我爱北京天安门广场。", "layer": 0, "head": 0, "block_q": 4, "block_k": 4},
    ]})

    block_q: Int = Field(4, ge=1, le=128, description="Query rows per tile.")
    block_k: Int = Field(4, ge=1, le=128, description="Keys per tile.")
    encoding: Encoding = Field("list", description="'base64': the output and hook_z at full float32 precision.")
    dtype: Literal["float32", "float16", "bfloat16"] = Field(
        "float32", description="The number format the memory traffic is counted in (bytes per number: 4, 2, 2).")
    traffic_block_q: Int = Field(128, ge=1, le=1024, description=(
        "The query block of a second tiled traffic curve: a GPU kernel's size (FlashAttention's are 64 to 128)."))


class TileOut(BaseModel):
    q_block: int
    k_block: int
    q_range: list[int]
    k_range: list[int]
    m: list[float | None] = Field(description="Running max per query row (None: no visible key yet, −∞).")
    l: list[float] = Field(description="Running Σ exp(score − m) per query row.")  # noqa: E741
    acc: list[list[float]] = Field(description="Σ exp(score − m)·v [block_q, d_head]; acc / l: the output so far.")


class FlashLabOut(HeadOut):
    tokens: list[TokenOut]
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
    crossover_length: int = Field(description=(
        "Tiling holds less than the n × n matrix from this many tokens on: the smallest n with "
        "n² > max(block_q · block_k, block_q · d_head), for this head's d_head and these blocks."))
    tiles: list[TileOut]
    output: TensorOut = Field(description="The tiled result [q_pos, d_head].")
    hook_z: TensorOut = Field(description="The model's own output of this head [q_pos, d_head].")
    max_diff_z: float = Field(description="max |output − hook_z|.")
    max_diff_naive: float = Field(description="max |output − naive softmax(QKᵀ)V|.")
    dtype: str
    bytes_per_number: int
    traffic_lengths: list[int] = Field(description=(
        "Sequence lengths N (queries = keys) of the traffic curves: this sentence's query count, then 64 … 16384."))
    standard_bytes: list[int] = Field(description="Per N: bytes standard attention moves to and from main memory for "
                                                  "one head, (4·N·d + 4·N²) numbers: S and P written and read back.")
    flash_bytes: list[int] = Field(description="Per N: the tiled loop's, with no tile skipped: N·d (Q) + "
                                               "⌈N/block_q⌉·2·N·d (K, V) read, N·d + N (O, logsumexp) written.")
    traffic_block_q: int
    flash_large_block_bytes: list[int] = Field(description="Per N: the tiled loop's with query blocks of "
                                                           "traffic_block_q.")
    loop_read_bytes: int = Field(description="What this run's tiled loop read, counted as it loaded each tile "
                                             "(masked tiles are never loaded).")
    loop_written_bytes: int = Field(description="What this run's tiled loop wrote: the output and logsumexp rows.")
    formula_read_bytes: int = Field(description="flash_bytes' read part at this sentence's sizes, no tile skipped.")
    formula_written_bytes: int
    standard_read_bytes: int = Field(description="Standard attention's reads at this sentence's sizes.")
    standard_written_bytes: int


def _finite(values: list[float]) -> list[float | None]:
    return [v if math.isfinite(v) else None for v in values]


def plan(context: Context, request: FlashLabRequest) -> Build:
    resolved = context.model
    cfg = resolved.cfg
    refuse_unreproduced(resolved, "The FlashAttention comparison")
    stack = attention_layer(resolved, request.layer, request.stack, request.cross, [request.head]).stack

    def build(run: Run) -> dict[str, Any]:
        inputs = run.inputs
        queries = inputs.target_tokens if stack == "decoder" else inputs.tokens
        keys = inputs.tokens if request.cross else queries
        n_q, n_k = len(queries or []), len(keys or [])
        q_tiles, k_tiles = math.ceil(n_q / request.block_q), math.ceil(n_k / request.block_k)
        cells = q_tiles * k_tiles * request.block_q * (cfg.d_head + 2)
        if cells > context.budget.max_cells:
            raise errors.response_too_large(cells, context.budget.max_cells)
        device = resolved.model.device
        tokens = one_row([t.id for t in inputs.tokens], device)  # [1, pos]
        target = one_row(None if inputs.target_tokens is None else [t.id for t in inputs.target_tokens], device)
        result, head = flash_for_head(resolved.model, tokens, request.layer, request.head, block_q=request.block_q,
                                      block_k=request.block_k, stack=stack, cross=request.cross,
                                      target_tokens=target)
        max_diff_z, max_diff_naive = differences(result, head)
        d_head, size = head.q.shape[1], BYTES_PER_NUMBER[request.dtype]
        formula, standard = flash_traffic(n_q, n_k, d_head, request.block_q), standard_traffic(n_q, n_k, d_head)
        curves = traffic_curves(n_q, d_head, request.block_q, request.traffic_block_q, size)
        traffic = {
            "dtype": request.dtype, "bytes_per_number": size, "traffic_lengths": curves.lengths,
            "standard_bytes": curves.standard, "flash_bytes": curves.flash,
            "traffic_block_q": request.traffic_block_q, "flash_large_block_bytes": curves.flash_large_block,
            "loop_read_bytes": result.numbers_read * size, "loop_written_bytes": result.numbers_written * size,
            "formula_read_bytes": formula.read * size, "formula_written_bytes": formula.written * size,
            "standard_read_bytes": standard.read * size, "standard_written_bytes": standard.written * size,
        }
        tiles = [{"q_block": t.q_block, "k_block": t.k_block, "q_range": list(t.q_range), "k_range": list(t.k_range),
                  "m": _finite(t.m.cpu().tolist()), "l": t.l.cpu().tolist(),
                  "acc": [[round(x, 6) for x in row] for row in t.acc.cpu().tolist()]} for t in result.tiles]
        dims = ("q_pos", "d_head")
        return {
            "model": resolved.name, "tokens": tokens_out(inputs.tokens), "query_tokens": tokens_out(queries),
            "key_tokens": tokens_out(keys), "stack": stack,
            "layer": request.layer, "head": request.head, "kv_head": request.head // (cfg.n_heads // cfg.kv_heads),
            "d_head": head.q.shape[1], "causal": head.causal, "window": head.window, "alibi_slope": head.alibi_slope,
            "block_q": request.block_q, "block_k": request.block_k, "q_tiles": q_tiles, "k_tiles": k_tiles,
            "computed_tiles": result.computed_tiles, "skipped_tiles": result.skipped_tiles,
            "largest_bytes": result.largest_bytes, "n_squared_bytes": result.n_squared_bytes,
            "crossover_length": memory_crossover(request.block_q, request.block_k, head.q.shape[1]), "tiles": tiles,
            "output": encode_tensor("flash output", result.output.cpu(), dims, request.encoding),
            "hook_z": encode_tensor("hook_z", head.z.cpu(), dims, request.encoding),
            "max_diff_z": max_diff_z, "max_diff_naive": max_diff_naive, **traffic,
        }

    return build


EXPERIMENT = Experiment(
    name="flash", method="POST", request=FlashLabRequest, response=FlashLabOut,
    plan=plan,
    summary=summary_of(__doc__),
)
