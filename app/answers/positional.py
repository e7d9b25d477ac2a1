"""GET /api/positional-encoding: the position information each kind adds, as the kind shows it (model/positional.py)."""

from __future__ import annotations

import dataclasses
from typing import Any

from analysis import readouts
from app import errors
from app.pipeline import Build, Context, Endpoint, Run
from app.resolve import Resolved
from app.schemas import NoInput, PositionalKindOut, PositionalOut, PositionalQuery
from app.tensors import encode_tensor
from model.positional import KINDS, NeedsModel, PositionalKind, Sizes, kind_of

DEFAULT_KIND = "sinusoidal"  # shown when neither the query nor the model names a kind with numbers


def kinds() -> list[dict[str, object]]:
    return [kind.to_dict() for kind in KINDS.values()]


def plan_positional_kinds(context: Context, request: NoInput) -> Build:
    return lambda run: kinds()


def plan_positional_encoding(context: Context, request: PositionalQuery) -> Build:
    """Sizes from the request, else from the model, else small defaults; checked before any work."""
    resolved = context.resolved
    cfg = resolved.cfg if resolved is not None else None
    if request.kind is not None:
        kind = kind_of(request.kind)  # the request's kind was checked against the registry
    elif cfg is not None and cfg.positional.where != "nowhere":
        kind = cfg.positional
    else:
        kind = kind_of(DEFAULT_KIND)
    own = resolved is not None and resolved.cfg.positional is kind  # the model uses this very kind
    if own and kind.learned and resolved is not None:
        if request.length > resolved.cfg.n_ctx:  # a learned table has n_ctx rows and no formula past them
            raise errors.beyond_context(resolved.name, request.length, resolved.cfg.n_ctx)
        if request.d_model not in (None, resolved.cfg.d_model):
            raise errors.conflicting_fields(
                f"The learned table of '{resolved.name}' has d_model {resolved.cfg.d_model}, not {request.d_model}: "
                "leave d_model out to read it.")
    # a rotary kind at the model's own sizes turns the model's own heads, which may be wider or narrower than
    # d_model / n_heads (Gemma, Qwen3's head_dim)
    at_model_heads = cfg is not None and kind.where == "q_k" and request.d_model is None and request.n_heads is None
    sizes = Sizes(length=request.length, d_model=request.d_model or (cfg.d_model if cfg else 64),
                  n_heads=request.n_heads or (cfg.n_heads if cfg else 4),
                  base=request.base or (cfg.rope_base if cfg else 10000.0), causal=request.causal,
                  # the global layers' heads (Gemma 4's are wider than its local ones; the last layer is global)
                  head_dim=cfg.d_head_of(cfg.n_layers - 1) if at_model_heads and cfg is not None else None)
    if own and resolved is not None and resolved.cfg.rope_freq_factors is not None:
        # the model's RoPE scaling: one factor per pair of its own (global) heads, so only at their head size
        global_head = resolved.cfg.d_head_of(resolved.cfg.n_layers - 1)
        if sizes.d_head != global_head:
            raise errors.conflicting_fields(
                f"The RoPE of '{resolved.name}' is scaled pair by pair for its heads of {global_head} "
                "dimensions: leave d_model and n_heads out to see it.")
        sizes = dataclasses.replace(sizes, freq_factors=resolved.cfg.rope_freq_factors)
    if own and resolved is not None and kind.where == "q_k" and sizes.d_head == resolved.cfg.d_head:
        # partial rotary and longrope (Phi-3): the model's own turned dimensions, long factor set, attention factor
        cfg = resolved.cfg
        sizes = dataclasses.replace(sizes, rotary_dims=cfg.rope_dims, attention_factor=cfg.rope_attention_factor,
                                    long_freq_factors=cfg.rope_long_freq_factors,
                                    original_context=cfg.rope_original_context)
    tensors = compute(kind, sizes, resolved if own else None)
    local_base = None
    if own and resolved is not None and kind.where == "q_k" and request.base is None:
        local = [layer for layer in range(resolved.cfg.n_layers) if resolved.cfg.is_local(layer)]
        if local and resolved.cfg.rope_of(local[0])[0] != sizes.base:
            # Gemma 3: the local (sliding-window) layers turn with a base of their own and no scaling factors
            local_base = resolved.cfg.rope_of(local[0])[0]
            local_sizes = dataclasses.replace(sizes, base=local_base, freq_factors=None, long_freq_factors=None,
                                              head_dim=None if sizes.head_dim is None else
                                              resolved.cfg.d_head_of(local[0]))  # Gemma 4: the local heads'
            tensors["local_angles"] = compute(kind, local_sizes, resolved)["angles"]

    def serialize(run: Run) -> dict[str, Any]:
        encoded = {name: encode_tensor(name, value, dims, request.encoding, request.dtype)
                   for name, (value, dims) in tensors.items()}
        return {"kind": kind.name, "model": resolved.name if resolved else None, "length": sizes.length,
                "d_model": sizes.d_model, "n_heads": sizes.n_heads, "d_head": sizes.d_head,
                "base": sizes.base if kind.where == "q_k" else None, "tensors": encoded,
                **({"local_base": local_base} if local_base is not None else {})}  # only where layers differ

    return serialize


def compute(kind: PositionalKind, sizes: Sizes, owner: Resolved | None) -> dict[str, Any]:
    """What the kind shows at these sizes; `owner`: the model that uses this kind (its own table), if any."""
    try:
        if sizes.head_dim is None:
            kind.check(sizes.d_model, sizes.n_heads)
        elif sizes.head_dim % 2:  # the model's own head width: rotary kinds turn pairs of it
            raise ValueError(f"positional encoding '{kind.name}' rotates pairs of dimensions: it needs an even "
                             f"head width, got {sizes.head_dim}")
    except ValueError as error:
        raise errors.conflicting_fields(f"{str(error)[0].upper()}{str(error)[1:]}.") from error
    table = readouts.position_table(owner.model) if owner is not None and kind.where == "embedding" else None
    try:
        return kind.show(sizes, table)
    except NeedsModel as error:
        raise errors.not_in_model(str(error)) from error


POSITIONAL_ENCODING = Endpoint(
    name="positional_encoding", method="GET", route="/api/positional-encoding", tag="positional",
    request=PositionalQuery, response=PositionalOut, plan=plan_positional_encoding, uses="chosen_model",
    summary="Sinusoidal table [pos, d_model], a model's learned table, RoPE angles / cos / sin per pair and a\n"
            "rotated all-ones vector [pos, d_head], or ALiBi slopes and bias per head [head, q_pos, k_pos].")

POSITIONAL_KINDS = Endpoint(
    name="positional_kinds", method="GET", route="/api/positional-encoding/kinds", tag="positional",
    request=NoInput, response=list[PositionalKindOut], plan=plan_positional_kinds, uses="nothing", on_loop=True,
    responses={},
    summary="Every positional-encoding kind this server implements (the one registry, model/positional.py): what it\n"
            "changes (the token vectors, q and k, the scores, or nothing), whether it is a learned table, and whether\n"
            "it is defined past the longest training sequence.")
