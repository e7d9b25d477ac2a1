"""POST /api/tokenize and /api/trace: tokens, and any slice of the recorded forward pass."""

from __future__ import annotations

from typing import Any

from analysis import readouts
from app import errors, stage_descriptions
from app.answers import Builder
from app.inference_pool import TraceRun
from app.request_checks import Budget, check_heads, check_layer
from app.resolve import Resolved
from app.schemas import TraceRequest
from app.tensors import encode_tensor
from app.tokenizing import Inputs, token_text, tokens_out
from model.hooks import NoSuchStage, select_names, stacks, stage_name


def tokenized(resolved: Resolved, inputs: Inputs) -> dict[str, Any]:
    out: dict[str, Any] = {"model": resolved.name, "tokens": tokens_out(inputs.tokens)}
    if inputs.target_tokens is not None:
        out["target_tokens"] = tokens_out(inputs.target_tokens)
    if inputs.chat_text is not None:
        out["chat_text"] = inputs.chat_text
    return out


def first_view(resolved: Resolved) -> list[str]:
    """What the explorer draws first: the tokens, their embeddings and positions (tens of KB, not the trace).

    Self-attention patterns are one request away (`stages`); they are left out here because
    heads × pos × pos values would push the first view past 64 KB on the default model.
    An encoder-decoder's first view keeps its cross-attention, the point of such a model.
    """
    names = set(resolved.model.trace_names)
    wanted = [stage_name(stage, stack=stack) for stack in stacks(resolved.cfg)
              for stage in ("tokens", "embed", "pos_embed")]
    if resolved.cfg.architecture == "encoder-decoder":
        wanted.append(stage_name("pattern", 0, stack="decoder", cross=True))
    return [n for n in wanted if n in names]


def pick_stages(resolved: Resolved, request: TraceRequest) -> list[str]:
    cfg = resolved.cfg
    if request.stages is None:
        names = first_view(resolved)
    else:
        try:
            names = select_names(resolved.model.trace_names, request.stages)
        except NoSuchStage as error:
            raise errors.unknown_stage(error.index) from None
    if request.layers is not None:
        for layer in request.layers:
            check_layer(layer, max(cfg.n_layers, cfg.decoder_layers))
        keep, layer_of = set(request.layers), stage_descriptions.layer_of(resolved.model)
        names = [n for n in names if layer_of[n] is None or layer_of[n] in keep]
    if request.heads is not None:
        check_heads(request.heads, cfg.n_heads)
    return names


def plan(resolved: Resolved, request: TraceRequest, budget: Budget) -> Builder:
    names = pick_stages(resolved, request)  # before the forward pass: a typo costs nothing
    return lambda run: build_trace(resolved, run, request, names, budget)


def build_trace(resolved: Resolved, run: TraceRun, request: TraceRequest, names: list[str],
                budget: Budget | None = None) -> dict[str, Any]:
    """Slice the cached full trace and serialize it (runs in the worker pool)."""
    trace, cfg = run.trace, resolved.cfg
    sliced = {}
    for name in names:
        tensor, dims = trace[name], trace.dims[name]
        if request.heads is not None:
            tensor = readouts.select_heads(tensor, dims, request.heads, cfg)
        sliced[name] = tensor
    if budget is not None:
        budget.check(sliced.values())
    stages = {name: encode_tensor(name, tensor, trace.dims[name], request.encoding, request.dtype)
              for name, tensor in sliced.items()}
    out: dict[str, Any] = {"model": resolved.name, "tokens": tokens_out(run.tokens), "stages": stages}
    if run.target_tokens is not None:
        out["target_tokens"] = tokens_out(run.target_tokens)
    if request.top_k and cfg.lm_head:
        out["top_tokens"] = next_tokens(resolved, run, request.top_k, 1.0)["top_k"]
        out["loss"] = text_loss(run)
    return out


def text_loss(run: TraceRun) -> float | None:
    """How surprised the model is by the text it read: mean next-token loss (the decoder's, for encoder-decoders)."""
    tokens = run.target_tokens if run.target_tokens is not None else run.tokens
    loss = readouts.sequence_loss(run.output[0], [t.id for t in tokens])
    return None if loss is None else round(loss, 6)


def next_tokens(resolved: Resolved, run: TraceRun, k: int, temperature: float) -> dict[str, Any]:
    """The next-token table at the last position, from the cached logits."""
    table = readouts.prediction(run.output[0, -1], temperature, k)
    rows = [
        {"id": int(i), "text": token_text(resolved.loaded, int(i)), "prob": round(p, 6), "logit": round(logit, 4)}
        for i, p, logit in zip(table["ids"], table["probs"], table["logits"], strict=True)  # type: ignore[arg-type]
    ]
    return {"top_k": rows, "rest": table["rest"]}
