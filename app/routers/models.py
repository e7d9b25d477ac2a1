"""GET /api/models and /api/models/{name}: what each model is, its config, sizes and stage names."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from app.deps import EngineDep, RegistryDep, resolve_named
from app.errors import ApiJSONResponse
from app.registry import Registry, Resolved
from app.schemas import ERRORS, ModelInfo

router = APIRouter(prefix="/api", tags=["models"])


def describe(resolved: Resolved, registry: Registry) -> dict[str, Any]:
    model, cfg, loaded = resolved.model, resolved.cfg, resolved.loaded
    stages = [
        {"name": name, "dims": [d for d in model.trace_dims(name) if d != "batch"]}  # as the API serves them
        for name in model.trace_names
    ]
    return {
        "name": resolved.name,
        "description": registry.description(resolved.name) or str(loaded.meta.get("description", "")),
        "architecture": cfg.architecture,
        "config": cfg.to_dict(),
        "n_layers": cfg.n_layers,
        "n_decoder_layers": cfg.decoder_layers if cfg.architecture == "encoder-decoder" else None,
        "n_heads": cfg.n_heads,
        "n_kv_heads": cfg.kv_heads,
        "d_head": cfg.d_head,
        "parameters": model.parameter_counts(),
        "stages": stages,
        "tokenizer": loaded.tokenizer.kind,
        "vocab_size": loaded.tokenizer.vocab_size,
        "default": resolved.name == registry.default,
        "meta": loaded.meta,
    }


@router.get("/models", response_model=list[ModelInfo])
async def list_models(registry: RegistryDep, engine: EngineDep) -> ApiJSONResponse:
    """Every model this server offers (the default one has `default: true`)."""
    out = [describe(await resolve_named(name, registry, engine), registry) for name in registry.names()]
    return ApiJSONResponse(out)


@router.get("/models/{name}", response_model=ModelInfo, responses={404: ERRORS[404]})
async def get_model(name: str, registry: RegistryDep, engine: EngineDep) -> ApiJSONResponse:
    """One model: config, parameter counts per component, every trace stage with its dims, and its meta."""
    return ApiJSONResponse(describe(await resolve_named(name, registry, engine), registry))
