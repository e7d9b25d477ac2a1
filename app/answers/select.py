"""Which stack, layer and heads a request means, checked against the model before any work."""

from __future__ import annotations

from app import errors
from app.resolve import Resolved


def stack_prefix(resolved: Resolved, stack: str | None, cross: bool) -> tuple[str, str | None, int]:
    """(trace-name prefix, stack name, number of layers) for a request's stack choice."""
    cfg = resolved.cfg
    if cfg.architecture == "encoder-decoder":
        chosen = stack or ("decoder" if cross else "encoder")
        if cross and chosen != "decoder":
            raise errors.invalid_request("Cross-attention lives in the decoder: use stack 'decoder'.")
        return f"{chosen}.", chosen, cfg.n_layers if chosen == "encoder" else cfg.decoder_layers
    if cross:
        raise errors.invalid_request("This model has no cross-attention: only encoder-decoder models have it.")
    if stack is not None and stack != cfg.architecture:
        raise errors.invalid_request(f"This model is a single {cfg.architecture} stack; leave out `stack`.")
    return "", None, cfg.n_layers


def check_layer(layer: int, n_layers: int) -> None:
    if not 0 <= layer < n_layers:
        raise errors.out_of_range("Layer", layer, n_layers)


def check_heads(heads: list[int], n_heads: int) -> None:
    for head in heads:
        if not 0 <= head < n_heads:
            raise errors.out_of_range("Head", head, n_heads)
