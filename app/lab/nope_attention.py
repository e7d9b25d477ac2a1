"""A NoPE layer's attention beside a RoPE layer's (SmolLM3): one head of each on the text's traced run, its
pattern and mean weight by query–key distance, and the last query's score on one key's own vector moved to every
position before it: the same everywhere in the NoPE layer, changing with the distance in the RoPE layer. A model
without NoPE layers is refused by name.

POST /api/lab/nope-attention: a NoPE layer's attention beside a RoPE layer's, on a model with both (SmolLM3)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from app import errors
from app.lab.common import Experiment, StackTokensOut, rounded, summary_of
from app.pipeline import Build, Context, Run
from app.request_checks import check_heads
from app.resolve import Resolved
from app.schemas import INTEGER, Int, TextInput
from app.tokenizing import tokens_out
from lab.nope_attention import LayerView, nope_attention

OptionalLayer = Annotated[int, Field(ge=0, le=1024), INTEGER] | None


class NopeAttentionLabRequest(TextInput):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"model": "smollm3", "text": "The cat sat on the mat. The cat sat on the mat.", "head": 0},
    ]})

    nope_layer: OptionalLayer = Field(None, description="A layer without positions (default: the model's first).")
    rope_layer: OptionalLayer = Field(None, description=(
        "A layer with RoPE (default: the nearest one below the NoPE layer, else above it)."))
    head: Int = Field(0, ge=0, le=1024, description="The query head, the same in both layers.")
    key: OptionalLayer = Field(None, description=(
        "The probe's key position (default: the key the NoPE layer's last query weights most)."))


class NopeLayerOut(BaseModel):
    layer: int
    positions: bool = Field(description="True: RoPE turns q and k in this layer; False: a NoPE layer.")
    kv_head: int = Field(description="The K/V head the query head reads (GQA).")
    weights: list[list[float | None]] = Field(description="[q_pos][k_pos] the traced weights (None: masked).")
    by_distance: list[float] = Field(description=(
        "[distance] mean weight on the key that many tokens back, over the queries that have one."))
    unturned_diff: float = Field(description=(
        "max |traced score − q·kᵀ/√d_head| with q and k unturned: float32 rounding in a NoPE layer."))
    score_scale: float = Field(description="max |traced score|, for scale.")
    moved: list[float] = Field(description=(
        "[distance] the last query's score on the probe key's own vector placed that many tokens back."))
    moved_spread: float = Field(description="max − min of `moved`: 0 in a NoPE layer.")
    real_distance: int = Field(description="Where the probe key really stands: query − key.")
    real_diff: float = Field(description="|moved[real_distance] − the traced score there|: the probe is the model's.")


class NopeAttentionLabOut(StackTokensOut):
    head: int
    n_heads: int
    nope_layers: list[int] = Field(description="Every layer of the model without positions.")
    rope_layers: list[int] = Field(description="Every attention layer with RoPE.")
    last_query: int = Field(description="The probe's query: the last position.")
    key: int = Field(description="The probe's key position.")
    nope: NopeLayerOut
    rope: NopeLayerOut


def layer_lists(resolved: Resolved) -> tuple[list[int], list[int]]:
    """The model's NoPE layers and its attention layers with RoPE; a model with no NoPE layer is refused."""
    cfg = resolved.cfg
    nope = list(cfg.nope_layers or ())
    if not nope or cfg.architecture != "decoder":
        raise errors.not_in_model(
            f"{resolved.name} has no layer without positions (NoPE): this experiment compares a NoPE layer with a "
            "RoPE layer of the same model, so it needs a model that drops RoPE in some layers, such as SmolLM3 "
            "(every fourth layer)."
        ).with_details("no_nope_layers", model=resolved.name)
    rope = [layer for layer in range(cfg.n_layers) if cfg.has_positions(layer) and not cfg.is_deltanet(layer)]
    if not rope:
        raise errors.not_in_model(f"{resolved.name} has no layer with RoPE to set beside its NoPE layers."
                                  ).with_details("no_rope_layers", model=resolved.name)
    return nope, rope


def chosen(request: NopeAttentionLabRequest, nope: list[int], rope: list[int]) -> tuple[int, int]:
    """The two layers: the request's, checked, or the first NoPE layer and the RoPE layer nearest below it."""
    nope_layer = nope[0] if request.nope_layer is None else request.nope_layer
    if nope_layer not in nope:
        raise errors.invalid_option("nope_layer", f"layer {nope_layer} is not a NoPE layer; this model's NoPE "
                                                  f"layers: {', '.join(map(str, nope))}."
                                    ).with_details("not_nope_layer", layer=nope_layer, layers=nope)
    below = [layer for layer in rope if layer < nope_layer]
    rope_layer = (below[-1] if below else rope[0]) if request.rope_layer is None else request.rope_layer
    if rope_layer not in rope:
        raise errors.invalid_option("rope_layer", f"layer {rope_layer} does not turn q and k by RoPE; this model's "
                                                  f"RoPE layers: {', '.join(map(str, rope))}."
                                    ).with_details("not_rope_layer", layer=rope_layer, layers=rope)
    return nope_layer, rope_layer


def layer_out(view: LayerView) -> dict[str, Any]:
    visible = view.readable.tolist()
    weights = [[round(w, 6) if seen else None for w, seen in zip(row, mask, strict=True)]
               for row, mask in zip(view.pattern.tolist(), visible, strict=True)]
    return {"layer": view.layer, "positions": view.positions, "kv_head": view.kv_head, "weights": weights,
            "by_distance": rounded(view.by_distance), "unturned_diff": view.unturned_diff,
            "score_scale": view.score_scale, "moved": rounded(view.moved, 7), "moved_spread": view.moved_spread,
            "real_distance": view.real_distance, "real_diff": view.real_diff}


def plan(context: Context, request: NopeAttentionLabRequest) -> Build:
    resolved = context.model
    nope, rope = layer_lists(resolved)
    nope_layer, rope_layer = chosen(request, nope, rope)
    check_heads([request.head], resolved.cfg.n_heads)

    def build(run: Run) -> dict[str, Any]:
        forward = run.trace()
        n = len(forward.tokens)
        if 2 * n * n > context.budget.max_cells:
            raise errors.response_too_large(2 * n * n, context.budget.max_cells)
        if request.key is not None and request.key >= n:
            raise errors.out_of_range("Position", request.key, n)
        found = nope_attention(resolved.model, forward.trace, nope_layer, rope_layer, request.head, request.key)
        return {"model": resolved.name, "tokens": tokens_out(forward.tokens), "stack": None, "head": request.head,
                "n_heads": resolved.cfg.n_heads, "nope_layers": nope, "rope_layers": rope, "last_query": found.query,
                "key": found.key, "nope": layer_out(found.layers[0]), "rope": layer_out(found.layers[1])}

    return build


EXPERIMENT = Experiment(
    name="nope_attention", method="POST", request=NopeAttentionLabRequest, response=NopeAttentionLabOut,
    plan=plan, summary=summary_of(__doc__),
)
