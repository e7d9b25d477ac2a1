"""What each trace stage is to the page: its place (stack, layer, site), its step and texts, and its panel.

model/hooks.py names the stages and stays "only the model"; which step of the explorer shows a stage, whether
it is that step's main tensor and which panel draws it are presentation, so they live here, in ONE table with a
row per stage as `stage_name` takes it. GET /api/models/{name} serves `describe(model)`; the page builds its
stepper from it and parses no name (static/js/stages.js). A hook the table lacks is an error (`Undescribed`),
and tests/app/test_stage_descriptions.py builds every shipped model and one of each family to catch it.

A step's key is also its texts' key: `stages.<step>.*` in static/text/en.json and zh.json. A step's kind is
the panel that draws it: static/js/panels/<kind>.js.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

from model.hooks import ATTENTION_STAGES, DELTANET_STAGES, MLP_STAGES, NORM_STAGES, checked_stack, stacks, stage_name
from model.transformer import Transformer


@dataclass(frozen=True)
class Row:
    """One stage as `stage_name` takes it (`stage`, `cross`), and what the page does with it."""

    stage: str  # "q", "ln1.normalized", "resid_post", "embed", ...
    step: str | None  # the stepper's step and its texts' key (stages.<step>); None: no stop of its own
    main: bool  # the step's main tensor (else an extra its panel reads beside it); see `describe` for the order
    kind: str | None  # the panel that draws the step: static/js/panels/<kind>.js
    cross: bool = False  # a stage of the decoder's cross-attention
    block: bool = True  # a stage of every block (False: of the stack, before or after its blocks)


def _norm(norm: str, step: str, *, block: bool = True, main: bool = True) -> tuple[Row, ...]:
    """A norm's three stages: the normalized vectors (the step's main) and its statistics (extras)."""
    return tuple(Row(f"{norm}.{what}", step, main and what == "normalized", "norm", block=block)
                 for what in NORM_STAGES)


def _attention(cross: bool) -> tuple[Row, ...]:
    prefix = "cross_" if cross else ""

    def own(stage: str, step: str, main: bool, kind: str) -> Row:
        # cross-attention's per-head norm, rotation and soft cap have no stop (and no texts) of their own yet
        return Row(stage, None, False, None, cross) if cross else Row(stage, step, main, kind)

    rows = (
        Row("q", f"{prefix}qkv", True, "qkv", cross), Row("k", f"{prefix}qkv", False, "qkv", cross),
        Row("v", f"{prefix}qkv", False, "qkv", cross),
        own("norm_q", "qk_norm", True, "qkv"), own("norm_k", "qk_norm", False, "qkv"),
        own("norm_v", "qk_norm", False, "qkv"),  # Gemma 4: each head's v normed too (no gain)
        # Gemma 4: the K and V of an earlier layer, which this layer attends with instead of its own
        own("k_shared", "kv_shared", True, "qkv"), own("v_shared", "kv_shared", False, "qkv"),
        own("rot_q", "rope", True, "qkv"), own("rot_k", "rope", False, "qkv"),
        Row("scores_raw", f"{prefix}scores", True, "attention", cross),
        Row("scores_scaled", f"{prefix}scale", True, "attention", cross),
        own("scores_capped", "softcap", True, "attention"),
        Row("attn_scores", f"{prefix}mask", True, "attention", cross),
        Row("pattern", f"{prefix}softmax", True, "attention", cross),
        Row("z", f"{prefix}z", True, "qkv", cross),
        own("out_gate", "out_gate", True, "qkv"), own("z_gated", "out_gate", False, "qkv"),  # Qwen3.5's gate
    )
    assert tuple(r.stage for r in rows) == ATTENTION_STAGES  # one row per stage model/hooks.py names
    return rows


def _deltanet() -> tuple[Row, ...]:
    """A gated DeltaNet layer's stages (Qwen3.5, model/deltanet.py), drawn by the deltanet panel."""
    steps = {"split_q": "dn_split", "split_k": "dn_split", "split_v": "dn_split", "split_z": "dn_split",
             "split_a": "dn_split", "split_b": "dn_split", "conv_q": "dn_conv", "conv_k": "dn_conv",
             "conv_v": "dn_conv", "query": "dn_qk", "key": "dn_qk", "decay": "dn_gates", "beta": "dn_gates",
             "state_change": "dn_state", "state": "dn_state", "read": "dn_read", "gated": "dn_gated"}
    mains = {"split_q", "conv_q", "query", "decay", "state", "read", "gated"}
    rows = tuple(Row(stage, step, stage in mains, "deltanet") for stage, step in steps.items())
    assert tuple(r.stage for r in rows) == DELTANET_STAGES  # one row per stage model/hooks.py names
    return rows


# Every stage, in the forward pass's order within its stack (the model's own order is what the page gets).
# Post-LN: `resid_mid_unnormed` (the sum) is the step's main, `resid_mid` (its norm's output) an extra;
# Pre-LN has only `resid_mid`, which is then the main (`describe`: a step's first main row wins, else its first).
ROWS: tuple[Row, ...] = (
    Row("tokens", "tokens", True, "tokens", block=False),
    Row("embed", "embed", True, "vectors", block=False),
    Row("token_type_embed", "embed", False, "vectors", block=False),
    Row("pos_embed", "pos", True, "positional", block=False),
    # Gemma 4's per-layer inputs of every layer at once [pos, layer, d_pli]: each block's slice is its step's
    Row("pli_token", None, False, None, block=False), Row("pli_context", None, False, None, block=False),
    Row("pli", None, False, None, block=False),
    *_norm("ln_embed", "embed_norm", block=False),
    Row("resid_pre", None, False, None),  # the previous step's vectors again (embedding or resid_post)
    *_norm("ln1", "ln1"),
    *_attention(cross=False),
    *_deltanet(),  # in place of attention in a gated DeltaNet layer
    *_norm("ln1_post", "post_norm"),  # Gemma: a norm on each sub-layer's output, one step for both
    Row("attn_out", "attn_out", True, "vectors"),
    Row("resid_mid_unnormed", "resid_mid", True, "vectors"),
    Row("resid_mid", "resid_mid", True, "vectors"),
    *_norm("ln_cross", "ln_cross"),
    *_attention(cross=True),
    Row("cross_attn_out", "cross_out", True, "vectors"),
    Row("resid_cross_unnormed", "resid_cross", True, "vectors"),
    Row("resid_cross", "resid_cross", True, "vectors"),
    *_norm("ln2", "ln2"),
    # a mixture of experts (model/moe.py) in place of the FFN's pre/gate/up/post: the router's step
    Row("router_in", "router", False, "router"),  # Gemma 4: what its router reads of the stream
    Row("router_logits", "router", False, "router"), Row("router_probs", "router", True, "router"),
    Row("expert_weights", "router", False, "router"),
    # Qwen3.5-MoE's shared expert, drawn beside the routed ones: its gate per token, its gated output
    Row("shared_gate", "router", False, "router"), Row("shared_out", "router", False, "router"),
    # Gemma 4's MoE block: the dense FFN's output and the experts' weighted sum, each after its norm, drawn side by side
    Row("dense_out", "router", False, "router"), Row("experts_in", "router", False, "router"),
    Row("experts_out", "router", False, "router"),
    Row("pre", "ffn_in", True, "ffn"), Row("gate", "ffn_in", False, "ffn"), Row("up", "ffn_in", False, "ffn"),
    Row("post", "ffn_act", True, "ffn"),
    *_norm("ln2_post", "post_norm", main=False),
    Row("mlp_out", "ffn_out", True, "vectors"),
    Row("resid_post_unnormed", "resid_post", True, "vectors"),
    # Gemma 4: the block's per-layer input gated into the stream, then the stream times the layer's scalar
    Row("pli_input", "pli", False, "vectors"), Row("pli_gated", "pli", False, "vectors"),
    *(Row(f"ln_pli.{what}", None, False, None) for what in NORM_STAGES),
    Row("pli_out", "pli", True, "vectors"),
    Row("resid_unscaled", "layer_scalar", True, "vectors"),
    Row("resid_post", "resid_post", True, "vectors"),
    *_norm("ln_final", "ln_final", block=False),
    Row("logits_raw", "logits", False, "logits", block=False),  # Gemma 2: before the soft cap
    Row("logits", "logits", True, "logits", block=False),
)

STEP_KINDS: dict[str, str] = {}
for _row in ROWS:  # one panel per step: a row that disagrees is a mistake in the table
    if _row.step is not None and _row.kind is not None and STEP_KINDS.setdefault(_row.step, _row.kind) != _row.kind:
        raise ValueError(f"step {_row.step!r} drawn by two panels: {STEP_KINDS[_row.step]!r} and {_row.kind!r}")
MODEL_STAGES = ("logits", "logits_raw")  # the model's, not a stack's: named without a stack


class Undescribed(LookupError):
    """A hook point with no row in ROWS: the page would not know what it is."""


def site_of(row: Row) -> str | None:
    """Where in its block (or stack) a stage sits: attn, cross_attn, deltanet, mlp, a norm's name (ln1, ln_final...),
    or None."""
    norm, _, what = row.stage.rpartition(".")
    if norm and what in NORM_STAGES:
        return norm
    if row.stage in ATTENTION_STAGES:
        return "cross_attn" if row.cross else "attn"
    if row.stage in DELTANET_STAGES:
        return "deltanet"
    return "mlp" if row.stage in MLP_STAGES and row.block else None


def hook_of(row: Row) -> str:
    """The stage's own name within its site (`q`, `normalized`, `pre`, `resid_post`): what a panel asks for."""
    return row.stage.rpartition(".")[2]


def _candidates(model: Transformer) -> dict[str, tuple[Row, str | None, int | None]]:
    """Every name the table can make for this model's stacks and layers: name -> (row, stack, layer)."""
    out: dict[str, tuple[Row, str | None, int | None]] = {}
    for stack in stacks(model.cfg):
        _, n_layers = checked_stack(model.cfg, stack)
        for row in ROWS:
            if not row.block:
                own = None if row.stage in MODEL_STAGES else stack
                out[stage_name(row.stage, stack=own)] = (row, own, None)
                continue
            for layer in range(n_layers):
                out[stage_name(row.stage, layer, stack=stack, cross=row.cross)] = (row, stack, layer)
    return out


_described: weakref.WeakKeyDictionary[Transformer, list[dict[str, Any]]] = weakref.WeakKeyDictionary()


def describe(model: Transformer) -> list[dict[str, Any]]:
    """Every stage of the model in the forward pass's order, described (cached per model; do not modify).

    Exactly one stage per step and layer is `main`: the first whose row says main, else the step's first.
    """
    if model in _described:
        return _described[model]
    candidates = _candidates(model)
    out: list[dict[str, Any]] = []
    steps: dict[tuple[str | None, int | None, str], list[dict[str, Any]]] = {}
    for name in model.trace_names:
        if name not in candidates:
            raise Undescribed(f"trace stage {name!r} has no row in app/stage_descriptions.py ROWS")
        row, stack, layer = candidates[name]
        entry = {"name": name, "dims": [d for d in model.trace_dims(name) if d != "batch"],  # as the API serves them
                 "stack": stack, "layer": layer, "site": site_of(row), "hook": hook_of(row), "step": row.step,
                 "kind": row.kind, "main": False}
        out.append(entry)
        if row.step is not None:
            steps.setdefault((stack, layer, row.step), []).append(entry)
    for entries in steps.values():
        first_main = next((e for e in entries if candidates[e["name"]][0].main), entries[0])
        first_main["main"] = True
    _described[model] = out
    return out


def layer_of(model: Transformer) -> dict[str, int | None]:
    """Stage name -> its block's layer (None outside the blocks)."""
    return {entry["name"]: entry["layer"] for entry in describe(model)}
