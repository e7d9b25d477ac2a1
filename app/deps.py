"""Dependencies shared by the routers: the registry, settings and engine, and the steps every
text request goes through (pick the model, check the text, tokenize, resolve layer/head)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import Depends, Request
from starlette.responses import Response

from app.engine import Engine, TraceRun, body_key
from app.errors import ApiError, empty_text, out_of_range
from app.registry import Registry, RegistryError, Resolved, encode_text
from app.schemas import InlineConfig, TextInput
from app.settings import Settings
from model.checkpoint import CheckpointError
from model.config import ConfigError
from model.tokenizer import Token


def get_registry(request: Request) -> Registry:
    return request.app.state.registry


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_engine(request: Request) -> Engine:
    return request.app.state.engine


RegistryDep = Annotated[Registry, Depends(get_registry)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
EngineDep = Annotated[Engine, Depends(get_engine)]


def unknown_model(registry: Registry) -> ApiError:
    names = registry.names()
    known = ", ".join(names) if names else "none are loaded"
    return ApiError(404, "unknown_model", f"There is no model with that name. Known models: {known}.")


async def resolve_named(name: str | None, registry: Registry, engine: Engine) -> Resolved:
    name = name or registry.default
    if name is None or name not in registry.names():
        raise unknown_model(registry)
    entry = registry.entries[name]
    try:
        if entry.loaded is None:  # a lazy model loads in the pool, not on the event loop
            return await engine.shared(("load", name), lambda: registry.get(name))
        return registry.get(name)
    except (KeyError, RegistryError) as error:
        raise unknown_model(registry) from error


async def resolve_snapshot(name: str | None, step: int, registry: Registry, engine: Engine) -> Resolved:
    resolved = await resolve_named(name, registry, engine)
    steps = [int(s["step"]) for s in registry.snapshots(resolved.name)]
    if step not in steps:
        listed = ", ".join(map(str, steps)) if steps else "none"
        raise ApiError(422, "unknown_snapshot",
                       f"Model '{resolved.name}' has no training snapshot at step {step}. Snapshots: {listed}.")
    try:
        return await engine.shared(("snapshot", resolved.name, step), lambda: registry.snapshot(resolved.name, step))
    except (LookupError, RegistryError, CheckpointError) as error:
        raise ApiError(422, "unknown_snapshot", f"The snapshot at step {step} cannot be loaded.") from error


async def resolve_model(body: Any, registry: Registry, engine: Engine, settings: Settings) -> Resolved:
    """The registered model a request names, or the inline from-scratch model it describes."""
    inline: InlineConfig | None = getattr(body, "config", None)
    snapshot: int | None = getattr(body, "snapshot", None)
    if inline is None and snapshot is not None:
        return await resolve_snapshot(body.model, snapshot, registry, engine)
    if inline is None:
        return await resolve_named(body.model, registry, engine)
    if snapshot is not None:
        raise ApiError(422, "invalid_request", "A from-scratch `config` model has no training snapshots.")
    if body.model is not None:
        raise ApiError(422, "invalid_request",
                       "Give either `model` (a name) or `config` (a from-scratch model), not both.")
    try:
        cfg = inline.to_config(n_ctx=max(settings.max_tokens, 8))
    except ConfigError as error:
        raise ApiError(422, "invalid_config", f"This configuration cannot work: {error}.") from error
    return await engine.shared(("inline", cfg), lambda: registry.inline(cfg))


def check_text(text: str, settings: Settings, field: str = "text") -> None:
    if text == "":
        raise empty_text(field)
    if len(text) > settings.max_chars:
        raise ApiError(422, "text_too_long",
                       f"The {field} is longer than the limit of {settings.max_chars} characters — shorten it.")


def encode_inputs(resolved: Resolved, body: TextInput, settings: Settings) -> tuple[list[Token], list[Token] | None]:
    """Tokens (and decoder tokens for encoder-decoder models), within the length limits."""
    check_text(body.text, settings)
    limit = min(settings.max_tokens, resolved.cfg.n_ctx)
    tokens = encode_text(resolved.loaded, body.text)
    if not tokens:
        raise ApiError(422, "empty_text", "The text gave no tokens for this model — try other characters.")
    if len(tokens) > limit:
        raise ApiError(422, "text_too_long",
                       f"The text is {len(tokens)} tokens long; the limit is {limit} tokens — shorten it.")
    if resolved.cfg.architecture != "encoder-decoder":
        return tokens, None  # target_text means nothing to a single-stack model
    target = body.target_text or ""
    if len(target) > settings.max_chars:
        raise ApiError(422, "text_too_long",
                       f"The target_text is longer than the limit of {settings.max_chars} characters — shorten it.")
    target_tokens = encode_text(resolved.loaded, target, as_target=True)
    if not target_tokens:
        raise ApiError(422, "empty_text",
                       "This model has no start token: give the decoder some target_text to start from.")
    if len(target_tokens) > limit:
        raise ApiError(422, "text_too_long",
                       f"The target_text is {len(target_tokens)} tokens long; "
                       f"the limit is {limit} tokens — shorten it.")
    return tokens, target_tokens


def tokens_out(tokens: list[Token] | None) -> list[dict[str, Any]] | None:
    return None if tokens is None else [t.to_dict() for t in tokens]


# ---------------------------------------------------------------- which stack / layer / head


def stack_prefix(resolved: Resolved, stack: str | None, cross: bool) -> tuple[str, str | None, int]:
    """(trace-name prefix, stack name, number of layers) for a request's stack choice."""
    cfg = resolved.cfg
    if cfg.architecture == "encoder-decoder":
        chosen = stack or ("decoder" if cross else "encoder")
        if cross and chosen != "decoder":
            raise ApiError(422, "invalid_request", "Cross-attention lives in the decoder: use stack 'decoder'.")
        return f"{chosen}.", chosen, cfg.n_layers if chosen == "encoder" else cfg.decoder_layers
    if cross:
        raise ApiError(422, "invalid_request",
                       "This model has no cross-attention: only encoder-decoder models have it.")
    if stack is not None and stack != cfg.architecture:
        raise ApiError(422, "invalid_request", f"This model is a single {cfg.architecture} stack; leave out `stack`.")
    return "", None, cfg.n_layers


def check_layer(layer: int, n_layers: int) -> None:
    if not 0 <= layer < n_layers:
        raise out_of_range("Layer", layer, n_layers)


def check_heads(heads: list[int], n_heads: int) -> None:
    for head in heads:
        if not 0 <= head < n_heads:
            raise out_of_range("Head", head, n_heads)


async def answer_from_trace(
    endpoint: str,
    body: Any,
    registry: Registry,
    engine: Engine,
    settings: Settings,
    prepare: Callable[[Resolved], Callable[[TraceRun], Any]],
) -> Response:
    """The path every endpoint that reads a trace shares.

    Pick the model; answer an identical earlier request from the rendered-body cache; else
    `prepare` checks the request against the model (a bad layer costs no forward pass) and
    returns the builder; then tokenize, trace (or reuse the cached trace) and build in the pool.
    """
    resolved = await resolve_model(body, registry, engine, settings)
    key = body_key(endpoint, resolved, body)
    if (cached := engine.cached_body(key)) is not None:
        return cached
    build = prepare(resolved)
    tokens, target_tokens = encode_inputs(resolved, body, settings)
    return await engine.answer(key, resolved, tokens, target_tokens, build)
