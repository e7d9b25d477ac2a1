"""POST /api/tokenize and POST /api/trace: tokens with spans, and any slice of the recorded forward pass."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter

from app.deps import (
    EngineDep,
    RegistryDep,
    SettingsDep,
    answer_from_trace,
    check_heads,
    check_layer,
    encode_inputs,
    resolve_model,
    tokens_out,
)
from app.engine import TraceRun
from app.errors import ApiError, ApiJSONResponse
from app.registry import Resolved, token_text
from app.schemas import ERRORS, TokenizeOut, TokenizeRequest, TraceOut, TraceRequest
from app.tensors import encode_tensor
from model import readouts
from model.hooks import select_names

router = APIRouter(prefix="/api", tags=["trace"])

LAYER_OF = re.compile(r"(?:^|\.)blocks\.(\d+)\.")


@router.post("/tokenize", response_model=TokenizeOut, responses=ERRORS)
async def tokenize(body: TokenizeRequest, registry: RegistryDep, engine: EngineDep, settings: SettingsDep) -> Any:
    """Tokens as the model sees them: id, text piece and character span [start, end) of the input."""
    resolved = await resolve_model(body, registry, engine, settings)
    tokens, target_tokens = encode_inputs(resolved, body, settings)
    out: dict[str, Any] = {"model": resolved.name, "tokens": tokens_out(tokens)}
    if target_tokens is not None:
        out["target_tokens"] = tokens_out(target_tokens)
    return ApiJSONResponse(out)


def first_view(resolved: Resolved) -> list[str]:
    """What the explorer draws first: the tokens, their embeddings and positions (tens of KB, not the trace).

    Self-attention patterns are one request away (`stages`); they are left out here because
    heads × pos × pos values would push the first view past 64 KB on the default model.
    An encoder-decoder's first view keeps its cross-attention, the point of such a model.
    """
    names = set(resolved.model.trace_names)
    stacks = ["encoder.", "decoder."] if resolved.cfg.architecture == "encoder-decoder" else [""]
    wanted = []
    for prefix in stacks:
        wanted += [f"{prefix}hook_tokens", f"{prefix}hook_embed", f"{prefix}hook_pos_embed"]
    if resolved.cfg.architecture == "encoder-decoder":
        wanted.append("decoder.blocks.0.cross_attn.hook_pattern")
    return [n for n in wanted if n in names]


def pick_stages(resolved: Resolved, body: TraceRequest) -> list[str]:
    cfg = resolved.cfg
    if body.stages is None:
        names = first_view(resolved)
    else:
        try:
            names = select_names(resolved.model.trace_names, body.stages)
        except KeyError as error:
            raise ApiError(
                422, "unknown_stage",
                f"{error.args[0]} — GET /api/models/{{name}} lists every stage name under `stages`; "
                "patterns such as 'blocks.0.attn.*' work too.",
            ) from error
    if body.layers is not None:
        for layer in body.layers:
            check_layer(layer, max(cfg.n_layers, cfg.decoder_layers))
        keep = set(body.layers)
        names = [n for n in names if (m := LAYER_OF.search(n)) is None or int(m.group(1)) in keep]
    if body.heads is not None:
        check_heads(body.heads, cfg.n_heads)
    return names


def build_trace(resolved: Resolved, run: TraceRun, body: TraceRequest, names: list[str]) -> dict[str, Any]:
    """Slice the cached full trace and serialize it (runs in the worker pool)."""
    trace, cfg = run.trace, resolved.cfg
    stages = {}
    for name in names:
        tensor, dims = trace[name], trace.dims[name]
        if body.heads is not None:
            tensor = readouts.select_heads(tensor, dims, body.heads, cfg)
        stages[name] = encode_tensor(name, tensor, dims, body.encoding, body.dtype)
    out: dict[str, Any] = {"model": resolved.name, "tokens": tokens_out(run.tokens), "stages": stages}
    if run.target_tokens is not None:
        out["target_tokens"] = tokens_out(run.target_tokens)
    if body.top_k and cfg.lm_head:
        out["top_tokens"] = predictions(resolved, run, body.top_k, 1.0)["top_k"]
    return out


def predictions(resolved: Resolved, run: TraceRun, k: int, temperature: float) -> dict[str, Any]:
    """The next-token table at the last position, from the cached logits."""
    table = readouts.prediction(run.output[0, -1], temperature, k)
    rows = [
        {"id": int(i), "text": token_text(resolved.loaded, int(i)), "prob": round(p, 6), "logit": round(logit, 4)}
        for i, p, logit in zip(table["ids"], table["probs"], table["logits"], strict=True)  # type: ignore[arg-type]
    ]
    return {"top_k": rows, "rest": table["rest"]}


@router.post("/trace", response_model=TraceOut, responses=ERRORS)
async def trace(body: TraceRequest, registry: RegistryDep, engine: EngineDep, settings: SettingsDep) -> Any:
    """Any stages of the forward pass, by trace name or pattern, optionally for some layers and heads.

    The full trace is computed once per (model, text, target_text) and cached: asking for
    another stage of the same text only slices and serializes.
    """

    def prepare(resolved: Resolved) -> Callable[[TraceRun], Any]:
        names = pick_stages(resolved, body)  # before the forward pass: a typo costs nothing
        return lambda run: build_trace(resolved, run, body, names)

    return await answer_from_trace("trace", body, registry, engine, settings, prepare)
