"""POST /api/activations: norms (in, out, statistics), the FFN and the residual stream of a layer or all layers."""

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
    check_layer,
    stack_prefix,
    tokens_out,
)
from app.engine import TraceRun
from app.registry import Resolved
from app.schemas import ERRORS, ActivationsOut, ActivationsRequest
from app.tensors import encode_tensor
from model import readouts

router = APIRouter(prefix="/api", tags=["activations"])

ATTENTION_INSIDE = re.compile(r"\.(attn|cross_attn)\.")  # attention internals have their own endpoints


def activation_names(resolved: Resolved, prefix: str, layers: list[int], whole_stack: bool) -> list[str]:
    """Every block stage outside the attention internals: resid_pre, ln1.*, attn_out, resid_mid, ln2.*, mlp.*, ..."""
    wanted = tuple(f"{prefix}blocks.{layer}." for layer in layers)
    names = [n for n in resolved.model.trace_names if n.startswith(wanted) and not ATTENTION_INSIDE.search(n)]
    if whole_stack:  # the stream also flows through the final norm
        names += [n for n in resolved.model.trace_names if n.startswith(f"{prefix}ln_final.")]
    return names


def build_activations(resolved: Resolved, run: TraceRun, body: ActivationsRequest, names: list[str],
                      layers: list[int], stack: str | None) -> dict[str, Any]:
    trace = run.trace
    stages, norms = {}, {}
    for name in names:
        stages[name] = encode_tensor(name, trace[name], trace.dims[name], body.encoding, body.dtype)
        if ".hook_resid" in name:
            norm = readouts.residual_norms(trace[name])  # [batch, pos]
            norms[name] = encode_tensor(name, norm, trace.dims[name][:-1], body.encoding, body.dtype)
    tokens = run.target_tokens if stack == "decoder" else run.tokens
    return {"model": resolved.name, "stack": stack, "layers": layers, "tokens": tokens_out(tokens),
            "stages": stages, "norms": norms}


@router.post("/activations", response_model=ActivationsOut, responses=ERRORS)
async def activations(body: ActivationsRequest, registry: RegistryDep, engine: EngineDep, settings: SettingsDep) -> Any:
    """Norm input/output with its statistics (mean, scale), FFN pre/post (gate/up for SwiGLU), and the
    residual stream with per-position L2 norms, for one layer or (layer omitted) all layers."""

    def prepare(resolved: Resolved) -> Callable[[TraceRun], Any]:
        prefix, stack, n_layers = stack_prefix(resolved, body.stack, cross=False)
        if body.layer is not None:
            check_layer(body.layer, n_layers)
        layers = [body.layer] if body.layer is not None else list(range(n_layers))
        names = activation_names(resolved, prefix, layers, whole_stack=body.layer is None)
        return lambda run: build_activations(resolved, run, body, names, layers, stack)

    return await answer_from_trace("activations", body, registry, engine, settings, prepare)
