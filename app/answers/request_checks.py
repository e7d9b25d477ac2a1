"""Which stack, layer and heads a request means, checked against the model before any work."""

from __future__ import annotations

from app import errors
from app.resolve import Resolved
from app.schemas import InterventionsIn
from app.tokenizing import Inputs
from model.edits import Interventions


def stack_prefix(resolved: Resolved, stack: str | None, cross: bool) -> tuple[str, str | None, int]:
    """(trace-name prefix, stack name, number of layers) for a request's stack choice."""
    cfg = resolved.cfg
    if cfg.architecture == "encoder-decoder":
        chosen = stack or ("decoder" if cross else "encoder")
        if cross and chosen != "decoder":
            raise errors.not_in_model("Cross-attention lives in the decoder: use stack 'decoder'.")
        return f"{chosen}.", chosen, cfg.n_layers if chosen == "encoder" else cfg.decoder_layers
    if cross:
        raise errors.not_in_model("This model has no cross-attention: only encoder-decoder models have it.")
    if stack is not None and stack != cfg.architecture:
        raise errors.not_in_model(f"This model is a single {cfg.architecture} stack; leave out `stack`.")
    return "", None, cfg.n_layers


def check_layer(layer: int, n_layers: int) -> None:
    if not 0 <= layer < n_layers:
        raise errors.out_of_range("Layer", layer, n_layers)


def check_heads(heads: list[int], n_heads: int) -> None:
    for head in heads:
        if not 0 <= head < n_heads:
            raise errors.out_of_range("Head", head, n_heads)


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
