"""POST /api/tokenize and /api/trace: tokens, and any slice of the recorded forward pass."""

from __future__ import annotations

from typing import Any

from analysis import readouts
from app import errors, stage_descriptions
from app.inference_pool import ForwardPass
from app.pipeline import Build, Context, Endpoint
from app.request_checks import Budget, check_heads, check_layer
from app.resolve import Resolved
from app.schemas import TokenizeOut, TokenizeRequest, TraceOut, TraceRequest
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


def plan_tokenize(context: Context, request: TokenizeRequest) -> Build:
    resolved = context.model
    return lambda run: tokenized(resolved, run.inputs)


def plan_trace(context: Context, request: TraceRequest) -> Build:
    resolved, budget = context.model, context.budget
    names = pick_stages(resolved, request)  # before the forward pass: a typo costs nothing
    return lambda run: build_trace(resolved, run.trace(), request, names, budget)


def build_trace(resolved: Resolved, forward: ForwardPass, request: TraceRequest, names: list[str],
                budget: Budget | None = None) -> dict[str, Any]:
    """Slice the cached full trace and serialize it (runs in the worker pool)."""
    trace, cfg = forward.trace, resolved.cfg
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
    out: dict[str, Any] = {"model": resolved.name, "tokens": tokens_out(forward.tokens), "stages": stages}
    if forward.target_tokens is not None:
        out["target_tokens"] = tokens_out(forward.target_tokens)
    if request.top_k and cfg.lm_head:
        out["top_tokens"] = next_tokens(resolved, forward, request.top_k, 1.0)["top_k"]
        out["loss"] = text_loss(forward)
    return out


def text_loss(forward: ForwardPass) -> float | None:
    """How surprised the model is by the text it read: mean next-token loss (the decoder's, for encoder-decoders)."""
    tokens = forward.target_tokens if forward.target_tokens is not None else forward.tokens
    loss = readouts.sequence_loss(forward.output[0], [t.id for t in tokens])
    return None if loss is None else round(loss, 6)


def next_tokens(resolved: Resolved, forward: ForwardPass, k: int, temperature: float) -> dict[str, Any]:
    """The next-token table at the last position, from the cached logits."""
    table = readouts.prediction(forward.output[0, -1], temperature, k)
    rows = [
        {"id": int(i), "text": token_text(resolved.loaded, int(i)), "prob": round(p, 6), "logit": round(logit, 4)}
        for i, p, logit in zip(table["ids"], table["probs"], table["logits"], strict=True)  # type: ignore[arg-type]
    ]
    return {"top_k": rows, "rest": table["rest"]}


TOKENIZE = Endpoint(
    name="tokenize", method="POST", route="/api/tokenize", tag="trace", request=TokenizeRequest,
    response=TokenizeOut, plan=plan_tokenize, on_loop=True,
    summary="Tokens as the model sees them: id, text piece and character span [start, end) of the input.")

TRACE = Endpoint(
    name="trace", method="POST", route="/api/trace", tag="trace", request=TraceRequest, response=TraceOut,
    plan=plan_trace,
    summary="Any stages of the forward pass, by trace name or pattern, optionally for some layers and heads.\n\n"
            "The full trace is computed once per (model, text, target_text) and cached: asking for\n"
            "another stage of the same text only slices and serializes.")
