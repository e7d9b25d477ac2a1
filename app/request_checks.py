"""What every request about a model is checked against before any work: its stack, layer and heads, whether
the model writes text, the interventions it asks for, and how many numbers an answer may hold.

The explorer's answers (app/answers/) and the lab's experiments (app/lab/) both check here, so one request
field means one thing with one error everywhere. "Attention layer L of stack S" is model.hooks.attention_layer
(one check, one NotInModel); this module gives it the request's defaults and the API's error codes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch

from app import errors
from app.resolve import Resolved
from app.schemas import InterventionsIn
from app.tokenizing import Inputs
from model import hooks
from model.config import TransformerConfig
from model.edits import Interventions
from model.hooks import AttentionLayer, NotInModel


@dataclass(frozen=True)
class Budget:
    """How many numbers one answer may hold (settings.max_response_cells)."""

    max_cells: int

    def check(self, tensors: Iterable[torch.Tensor]) -> None:
        """Before serializing: refuse an answer over the budget, naming the limit and the filters."""
        cells = sum(t.numel() for t in tensors)
        if cells > self.max_cells:
            raise errors.response_too_large(cells, self.max_cells)


def check_generative(resolved: Resolved) -> None:
    """A model that writes text: a decoder (or an encoder-decoder) with an unembedding."""
    if resolved.cfg.architecture == "encoder" or not resolved.cfg.lm_head:
        raise errors.not_generative()


# ---------------------------------------------------------------- which stack, layer and heads


def requested_stack(cfg: TransformerConfig, stack: str | None, cross: bool) -> str | None:
    """A request's `stack` with its default: an encoder-decoder's encoder (its decoder for cross-attention)."""
    if cfg.architecture == "encoder-decoder" and stack is None:
        return "decoder" if cross else "encoder"
    return stack


def stack_of(resolved: Resolved, stack: str | None, cross: bool = False) -> tuple[str | None, int]:
    """(the stack a request means, as stage names spell it: None for a single stack; its number of layers)."""
    try:
        return hooks.checked_stack(resolved.cfg, requested_stack(resolved.cfg, stack, cross), cross)
    except NotInModel as refused:  # a stack: never a layer
        raise errors.not_in_model(str(refused)) from None


def attention_layer(resolved: Resolved, layer: int, stack: str | None, cross: bool = False,
                    heads: Iterable[int] = ()) -> AttentionLayer:
    """Attention layer `layer` of the request's stack (its cross-attention when `cross`), and `heads` of it."""
    cfg = resolved.cfg
    try:
        where = hooks.attention_layer(cfg, layer, requested_stack(cfg, stack, cross), cross)
    except NotInModel as refused:  # past the stack's layers: out_of_range; no such stack or cross-attention
        if refused.layers is not None:
            raise errors.out_of_range("Layer", layer, refused.layers) from None
        raise errors.not_in_model(str(refused)) from None
    check_heads(heads, cfg.n_heads)
    return where


def check_layer(layer: int, n_layers: int) -> None:
    """Any layer of any stack (a trace's `layers`); one stack's: `stack_of`'s count, or `attention_layer`."""
    if not 0 <= layer < n_layers:
        raise errors.out_of_range("Layer", layer, n_layers)


def check_heads(heads: Iterable[int], n_heads: int) -> None:
    for head in heads:
        if not 0 <= head < n_heads:
            raise errors.out_of_range("Head", head, n_heads)


# ---------------------------------------------------------------- interventions


def interventions_for(resolved: Resolved, asked: InterventionsIn | None) -> Interventions | None:
    """The model's interventions for a request, checked against its layers and heads (None: none asked)."""
    if asked is None:
        return None
    cfg = resolved.cfg
    n_layers = {"encoder": cfg.n_layers, "decoder": cfg.decoder_layers}.get(asked.ablate_stack or "",
                                                                          max(cfg.n_layers, cfg.decoder_layers))
    for layer, head in asked.ablate_heads or []:
        if not 0 <= layer < n_layers or not 0 <= head < cfg.n_heads:
            raise errors.invalid_intervention(
                f"ablate_heads: [{errors.shown(layer)}, {errors.shown(head)}] does not exist: this model has "
                f"layers 0 to {n_layers - 1} and heads 0 to {cfg.n_heads - 1}.")
        if cfg.is_deltanet(layer):  # Qwen3.5: no attention heads there, nothing to zero
            attention = ", ".join(map(str, cfg.attention_layer_numbers))
            raise errors.invalid_intervention(
                f"ablate_heads: layer {layer} is a gated DeltaNet layer (a state matrix, no attention heads to "
                f"zero); this model's attention layers: {attention}.")
    changes = Interventions(no_scale=asked.no_scale, no_mask=asked.no_mask, window=asked.window,
                            temperature=asked.temperature,
                            ablate_heads=tuple(sorted({(layer, head) for layer, head in asked.ablate_heads or []})),
                            ablate_stack=asked.ablate_stack if asked.ablate_heads else None)
    if asked.ablate_stack is not None and cfg.architecture != "encoder-decoder":
        raise errors.invalid_intervention("ablate_stack: this model has a single stack; leave it out.")
    return changes or None


def shuffled(inputs: Inputs, asked: InterventionsIn | None) -> Inputs:
    """The tokens in the order `shuffle` gives, which must be a permutation of their positions."""
    if asked is None or asked.shuffle is None:
        return inputs
    n = len(inputs.tokens)
    if sorted(asked.shuffle) != list(range(n)):
        raise errors.invalid_intervention(
            f"shuffle must list each position 0 to {n - 1} exactly once: the text has {n} tokens "
            "(see /api/tokenize).")
    return Inputs([inputs.tokens[i] for i in asked.shuffle], inputs.target_tokens)
