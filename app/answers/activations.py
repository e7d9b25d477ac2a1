"""POST /api/activations: norms (in, out, statistics), the FFN and the residual stream of a layer or all layers."""

from __future__ import annotations

import re
from typing import Any

from analysis import readouts
from app.inference_pool import ForwardPass
from app.pipeline import Build, Context, Endpoint
from app.request_checks import Budget, check_layer, stack_of
from app.resolve import Resolved
from app.schemas import ActivationsOut, ActivationsRequest
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


def plan(context: Context, request: ActivationsRequest) -> Build:
    resolved, budget = context.model, context.budget
    stack, n_layers = stack_of(resolved, request.stack)
    if request.layer is not None:
        check_layer(request.layer, n_layers)
    layers = [request.layer] if request.layer is not None else list(range(n_layers))
    names = activation_names(resolved, stack, layers, whole_stack=request.layer is None)
    return lambda run: build_activations(resolved, run.trace(), request, names, layers, stack, budget)


def build_activations(resolved: Resolved, forward: ForwardPass, request: ActivationsRequest, names: list[str],
                      layers: list[int], stack: str | None, budget: Budget) -> dict[str, Any]:
    trace = forward.trace
    tensors = {name: trace[name] for name in names}  # read once: a compact trace runs each block again to read it
    budget.check(tensors.values())
    stages, norms = {}, {}
    for name, tensor in tensors.items():
        stages[name] = encode_tensor(name, tensor, trace.dims[name], request.encoding, request.dtype)
        if ".hook_resid" in name:
            norm = readouts.residual_norms(tensor)  # [batch, pos]
            norms[name] = encode_tensor(name, norm, trace.dims[name][:-1], request.encoding, request.dtype)
    tokens = forward.target_tokens if stack == "decoder" else forward.tokens
    return {"model": resolved.name, "stack": stack, "layers": layers, "tokens": tokens_out(tokens),
            "stages": stages, "norms": norms}


ACTIVATIONS = Endpoint(
    name="activations", method="POST", route="/api/activations", tag="activations", request=ActivationsRequest,
    response=ActivationsOut, plan=plan,
    summary="Norm input/output with its statistics (mean, scale), FFN pre/post (gate/up for SwiGLU), and the\n"
            "residual stream with per-position L2 norms, for one layer or (layer omitted) all layers.")
