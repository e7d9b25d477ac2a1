"""Identity hook points and the trace that records them.

Every stage of the forward pass goes through a `HookPoint`, an identity module that
knows its stable name and the names of its tensor's dimensions. Nothing is attached to
the modules: entering a `Trace` sets it as the active trace (a context variable), and every
hook point, on every forward pass, checks that variable and records its tensor only when the
active trace wants its name. Nothing is stored without a trace, and asking for one layer's
attention costs the memory of that layer alone.
Recording keeps a reference (no copy): the model never modifies a tensor in place,
so recording cannot change any output.

A trace may also carry edits (TransformerLens-style hooks): name -> fn(value, trace) that
returns the value the forward pass continues with. They live on the trace, never on the
modules, so an edit changes one call and nothing else; `model/edits.py` builds the
named experiments (no scaling, no mask, ablated heads, ...) from them.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import nn

if TYPE_CHECKING:
    from model.config import TransformerConfig

    NamesFilter = Iterable[str] | Callable[[str], bool] | None
    Edit = Callable[[torch.Tensor, "Trace"], torch.Tensor]
else:
    NamesFilter = object
    Edit = object


# The trace being recorded by the current thread / task. A context variable rather than
# state on the modules, so concurrent requests on one shared model never mix traces.
_active_trace: ContextVar[Trace | None] = ContextVar("active_trace", default=None)


class HookPoint(nn.Module):
    """Identity on the forward pass; hands its input to the active trace if it asked for it."""

    def __init__(self, dims: tuple[str, ...]) -> None:
        super().__init__()
        self.dims = dims
        self.name = ""  # set by the owning Transformer from the module tree

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        trace = _active_trace.get()
        if trace is None:
            return x
        for edit in trace.edits.get(self.name, ()):
            x = edit(x, trace)  # the value the rest of this call sees (and the trace records)
        if self.name in trace.wanted:
            trace.record(self.name, self.dims, x)
        return x

    # Called directly, not through nn.Module.__call__: nothing is ever attached to a hook point (the trace is a
    # context variable), and a forward pass crosses ~25 of them per layer, where torch's module dispatch cost
    # about 1.5 us each (~1 % of SmolLM2's forward).
    __call__ = forward

    def extra_repr(self) -> str:
        return f"dims={list(self.dims)}"


class Trace(Mapping[str, torch.Tensor]):
    """Name -> tensor for the stages one forward pass went through, in execution order."""

    def __init__(self, wanted: Iterable[str], edits: Mapping[str, Sequence[Edit]] | None = None) -> None:
        self.edits: Mapping[str, Sequence[Edit]] = edits or {}
        self.wanted = frozenset(wanted)
        self.tensors: dict[str, torch.Tensor] = {}
        self.dims: dict[str, tuple[str, ...]] = {}

    def __enter__(self) -> Trace:
        self._token = _active_trace.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _active_trace.reset(self._token)

    def record(self, name: str, dims: tuple[str, ...], tensor: torch.Tensor) -> None:
        # detach only what autograd tracks: under inference mode (every traced call) nothing is,
        # and a detached view per stage cost ~2 us x 100 stages
        self.tensors[name] = tensor.detach() if tensor.requires_grad else tensor
        self.dims[name] = dims

    def __getitem__(self, name: str) -> torch.Tensor:
        return self.tensors[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.tensors)

    def __len__(self) -> int:
        return len(self.tensors)

    def nbytes(self) -> int:
        """The bytes its tensors hold, each once (a block's output is the next block's input: one tensor)."""
        held = {id(t): t for t in self.tensors.values()}
        return sum(t.numel() * t.element_size() for t in held.values())


def active_trace() -> Trace | None:
    """The trace the current forward pass records into, if any."""
    return _active_trace.get()


class NoSuchStage(KeyError):
    """A pattern that matches no stage; `index` is its place in the filter (an API points at it by index)."""

    def __init__(self, pattern: str, index: int) -> None:
        super().__init__(f"no trace stage matches {pattern!r}")
        self.index = index


def select_names(all_names: list[str], names: NamesFilter) -> list[str]:
    """Resolve a names filter to hook names, keeping the model's order.

    A filter is None (everything), a callable on the name, or an iterable of exact
    names and shell-style patterns (``blocks.0.attn.*``). A pattern that matches
    nothing is an error, so a typo never silently returns an empty trace.
    """
    if names is None:
        return list(all_names)
    if callable(names):
        return [n for n in all_names if names(n)]
    wanted = [names] if isinstance(names, str) else list(names)
    known = frozenset(all_names)  # a list's `in` made a full trace's 695 exact names cost ~2 ms
    chosen: set[str] = set()
    for index, pattern in enumerate(wanted):
        if any(c in pattern for c in "*?["):
            matches = matching(all_names, pattern)
        else:
            matches = [pattern] if pattern in known else []
        if not matches:
            raise NoSuchStage(pattern, index)
        chosen.update(matches)
    return [n for n in all_names if n in chosen]


def matching(all_names: list[str], pattern: str) -> list[str]:
    """Names matching a shell-style pattern. fnmatch.filter would keep every pattern it ever compiled (up to
    32,768 of them, a server's memory that clients choose); `re` keeps a few hundred."""
    regex = re.compile(fnmatch.translate(pattern))
    return [name for name in all_names if regex.match(name)]


# ---------------------------------------------------------------- stage names
#
# A stage's name says where it sits (TransformerLens's names, an encoder-decoder's stack in front):
#
#     [encoder. | decoder.] [blocks.{layer}.] [attn. | cross_attn. | mlp. | ln1. | ...] hook_{stage}
#
# `stack` is None for a model's one stack, "encoder" or "decoder" for an encoder-decoder's two. Every name
# outside model/ is made here, so "attention layer L of stack S" is spelled in one place.

# a stack's, before its blocks (pli_*: Gemma 4's per-layer inputs, model/per_layer_inputs.py)
EMBED_STAGES = ("tokens", "embed", "pos_embed", "token_type_embed", "pli_token", "pli_context", "pli")
# norm_v: Gemma 4's v norm; k_shared, v_shared: the K and V a layer shares with an earlier one (Gemma 4)
ATTENTION_STAGES = ("q", "k", "v", "norm_q", "norm_k", "norm_v", "k_shared", "v_shared", "rot_q", "rot_k",
                    "scores_raw", "scores_scaled", "scores_capped", "attn_scores", "pattern", "z",
                    "out_gate", "z_gated")  # the last 2: Qwen3.5's gated attention output
# router_logits .. expert_weights: a mixture of experts' (model/moe.py); shared_*: its shared expert (Qwen3.5-MoE);
# router_in, experts_in, dense_out, experts_out: Gemma 4's MoE block (what the router and experts read, the summands)
MLP_STAGES = ("pre", "gate", "up", "post", "router_in", "router_logits", "router_probs", "expert_weights",
              "shared_gate", "shared_out", "dense_out", "experts_in", "experts_out")
# a gated DeltaNet layer's (model/deltanet.py), in the order the forward pass reaches them: blocks.0.deltanet.hook_beta
DELTANET_STAGES = ("split_q", "split_k", "split_v", "split_z", "split_a", "split_b", "conv_q", "conv_k", "conv_v",
                   "query", "key", "decay", "beta", "state_change", "state", "read", "gated")
BLOCK_STAGES = ("resid_pre", "attn_out", "resid_mid_unnormed", "resid_mid", "cross_attn_out", "resid_cross_unnormed",
                "resid_cross", "mlp_out", "resid_post_unnormed", "pli_input", "pli_gated", "pli_out", "resid_unscaled",
                "resid_post")
NORM_STAGES = ("mean", "scale", "normalized")  # of a norm, named with it: "ln1.normalized", "ln_final.scale"


def stack_prefix(stack: str | None) -> str:
    """"" for a model's one stack, "encoder." or "decoder." for an encoder-decoder's."""
    return "" if stack is None else f"{stack}."


def block_prefix(stack: str | None, layer: int | str) -> str:
    """`blocks.1.`, `decoder.blocks.0.`; a layer of "*" makes a pattern over every block."""
    return f"{stack_prefix(stack)}blocks.{layer}."


def attention_prefix(stack: str | None, layer: int | str, cross: bool = False) -> str:
    """`blocks.1.attn.`, `decoder.blocks.0.cross_attn.`: what one attention layer's stage names start with."""
    return block_prefix(stack, layer) + ("cross_attn." if cross else "attn.")


def stage_name(stage: str, layer: int | str | None = None, *, stack: str | None = None, cross: bool = False) -> str:
    """The trace name of one stage, as TransformerLens's get_act_name (a layer of "*" makes a pattern):

        stage_name("pattern", 1)                               blocks.1.attn.hook_pattern
        stage_name("pattern", 0, stack="decoder", cross=True)  decoder.blocks.0.cross_attn.hook_pattern
        stage_name("resid_post", "*")                          blocks.*.hook_resid_post
        stage_name("ln1.normalized", 0)                        blocks.0.ln1.hook_normalized
        stage_name("embed", stack="encoder")                   encoder.hook_embed
        stage_name("logits")                                   hook_logits
    """
    norm, _, what = stage.rpartition(".")
    if cross and stage not in ATTENTION_STAGES:
        raise ValueError(f"{stage!r} is no attention stage: only those have a cross-attention")
    if norm and what in NORM_STAGES:  # a norm of a block (ln1, ln2, ln_cross) or of the stack (ln_embed, ln_final)
        return f"{stack_prefix(stack) if layer is None else block_prefix(stack, layer)}{norm}.hook_{what}"
    if layer is None and stage in ("logits", "logits_raw"):  # logits_raw: before a soft cap (Gemma 2)
        return f"hook_{stage}"
    if layer is None and stage in EMBED_STAGES:
        return f"{stack_prefix(stack)}hook_{stage}"
    if layer is not None and stage in ATTENTION_STAGES:
        return f"{attention_prefix(stack, layer, cross)}hook_{stage}"
    if layer is not None and stage in DELTANET_STAGES:
        return f"{block_prefix(stack, layer)}deltanet.hook_{stage}"
    if layer is not None and stage in MLP_STAGES:
        return f"{block_prefix(stack, layer)}mlp.hook_{stage}"
    if layer is not None and stage in BLOCK_STAGES:
        return f"{block_prefix(stack, layer)}hook_{stage}"
    raise ValueError(f"no stage {stage!r} {'outside the blocks' if layer is None else 'in a block'}")


class NotInModel(ValueError):
    """A stack, cross-attention or layer the model does not have, said for a student.

    `layers` is the stack's number of layers when the layer is past them (the API answers that as out_of_range).
    """

    def __init__(self, message: str, layers: int | None = None) -> None:
        super().__init__(message)
        self.layers = layers


def stacks(cfg: TransformerConfig) -> tuple[str | None, ...]:
    """The model's stacks as stage names spell them: (None,), or ("encoder", "decoder")."""
    return ("encoder", "decoder") if cfg.architecture == "encoder-decoder" else (None,)


def checked_stack(cfg: TransformerConfig, stack: str | None, cross: bool = False) -> tuple[str | None, int]:
    """(the stack as stage names spell it, its number of layers), checked against the model.

    A single-stack model's stack is None (naming it by its architecture is allowed); an encoder-decoder's
    must be named, and only its decoder has cross-attention.
    """
    if cfg.architecture == "encoder-decoder":
        if stack not in ("encoder", "decoder"):
            raise NotInModel("This model is an encoder-decoder: name its stack, 'encoder' or 'decoder'.")
        if cross and stack != "decoder":
            raise NotInModel("Cross-attention lives in the decoder: use stack 'decoder'.")
        return stack, cfg.n_layers if stack == "encoder" else cfg.decoder_layers
    if cross:
        raise NotInModel("This model has no cross-attention: only encoder-decoder models have it.")
    if stack is not None and stack != cfg.architecture:
        raise NotInModel(f"This model is a single {cfg.architecture} stack; leave out `stack`.")
    return None, cfg.n_layers


@dataclass(frozen=True)
class AttentionLayer:
    """Attention layer `layer` of stack `stack` (its cross-attention when `cross`), as `attention_layer` checked it."""

    stack: str | None
    layer: int
    cross: bool = False

    @property
    def prefix(self) -> str:
        return attention_prefix(self.stack, self.layer, self.cross)

    def stage(self, stage: str) -> str:
        """One of its stages' trace name: `stage("pattern")` -> blocks.1.attn.hook_pattern."""
        return stage_name(stage, self.layer, stack=self.stack, cross=self.cross)


def attention_layer(cfg: TransformerConfig, layer: int, stack: str | None = None,
                    cross: bool = False) -> AttentionLayer:
    """Attention layer `layer` of stack `stack`, checked against the model (NotInModel when it has no such layer)."""
    stack, n_layers = checked_stack(cfg, stack, cross)
    if not 0 <= layer < n_layers:
        raise NotInModel(f"Layer {layer} does not exist: this model has {n_layers}, numbered 0 to {n_layers - 1}.",
                         n_layers)
    if cfg.is_deltanet(layer):
        attention = ", ".join(map(str, cfg.attention_layer_numbers)) or "none"
        raise NotInModel(f"Layer {layer} is a gated DeltaNet layer (linear attention: a state matrix, no attention "
                         f"pattern); this model's attention layers: {attention}.")
    return AttentionLayer(stack, layer, cross)
