"""POST /api/activations: norms (in, out, statistics), the FFN and the residual stream of a layer or all layers."""

from __future__ import annotations

import re
from typing import Any

from analysis import readouts
from app.answers import Builder
from app.inference_pool import TraceRun
from app.request_checks import Budget, check_layer, stack_of
from app.resolve import Resolved
from app.schemas import ActivationsRequest
from app.tensors import encode_tensor
from app.tokenizing import tokens_out
from model.hooks import block_prefix, stack_prefix

ATTENTION_INSIDE = re.compile(r"\.(attn|cross_attn)\.")  # attention internals have their own endpoints


def activation_names(resolved: Resolved, stack: str | None, layers: list[int], whole_stack: bool) -> list[str]:
    """Every block stage outside the attention internals: resid_pre, ln1.*, attn_out, resid_mid, ln2.*, mlp.*, ..."""
    wanted = tuple(block_prefix(stack, layer) for layer in layers)
    names = [n for n in resolved.model.trace_names if n.startswith(wanted) and not ATTENTION_INSIDE.search(n)]
    if whole_stack:  # the stream also flows through the final norm
        names += [n for n in resolved.model.trace_names if n.startswith(f"{stack_prefix(stack)}ln_final.")]
    return names


def plan(resolved: Resolved, request: ActivationsRequest, budget: Budget) -> Builder:
    stack, n_layers = stack_of(resolved, request.stack)
    if request.layer is not None:
        check_layer(request.layer, n_layers)
    layers = [request.layer] if request.layer is not None else list(range(n_layers))
    names = activation_names(resolved, stack, layers, whole_stack=request.layer is None)
    return lambda run: build_activations(resolved, run, request, names, layers, stack, budget)


def build_activations(resolved: Resolved, run: TraceRun, request: ActivationsRequest, names: list[str],
                      layers: list[int], stack: str | None, budget: Budget) -> dict[str, Any]:
    trace = run.trace
    budget.check(trace[name] for name in names)
    stages, norms = {}, {}
    for name in names:
        stages[name] = encode_tensor(name, trace[name], trace.dims[name], request.encoding, request.dtype)
        if ".hook_resid" in name:
            norm = readouts.residual_norms(trace[name])  # [batch, pos]
            norms[name] = encode_tensor(name, norm, trace.dims[name][:-1], request.encoding, request.dtype)
    tokens = run.target_tokens if stack == "decoder" else run.tokens
    return {"model": resolved.name, "stack": stack, "layers": layers, "tokens": tokens_out(tokens),
            "stages": stages, "norms": norms}
