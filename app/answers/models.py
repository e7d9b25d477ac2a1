"""GET /api/models and /api/models/{name}: what each model is, its config, sizes and stages described."""

from __future__ import annotations

from typing import Any

from app import stage_descriptions
from app.pipeline import Build, Context, Endpoint
from app.registry import Registry
from app.resolve import Resolved
from app.schemas import ERRORS, ModelChoice, ModelInfo, ModelName, NoInput, StageInfo
from model.transformer import distinct_parameters


def describe(resolved: Resolved, registry: Registry) -> dict[str, Any]:
    model, cfg, loaded = resolved.model, resolved.cfg, resolved.loaded
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
        # every weight once (a tied unembedding is counted with the embedding), in module order
        "weights": [{"name": n, "shape": list(p.shape), "count": p.numel()} for n, p in distinct_parameters(model)],
        "stages": stage_descriptions.describe(model),  # each stage's place, step, panel and dims
        "tokenizer": loaded.tokenizer.kind,
        "vocab_size": loaded.tokenizer.vocab_size,
        "default": resolved.name == registry.default,
        "meta": loaded.meta,
    }


def in_menu_order(described: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Models on their own first, then the members of a family of look-alikes (meta `pe_family`: the
    positional-encoding family), each part in registry order, so six pe-* models come after tiny-gpt."""
    return sorted(described, key=lambda d: "pe_family" in d["meta"])


def plan_list_models(context: Context, request: NoInput) -> Build:
    """Every model offered, described. A lazy model whose first load fails here is left out: from then on it is
    listed, with its reason, among GET /api/health's `refused` (the service's every_model)."""
    return lambda run: in_menu_order([describe(resolved, context.registry) for resolved in context.every_model])


def plan_get_model(context: Context, request: ModelName) -> Build:
    resolved = context.model
    return lambda run: describe(resolved, context.registry)


LIST_MODELS = Endpoint(
    name="list_models", method="GET", route="/api/models", tag="models", request=NoInput,
    response=list[ModelInfo], plan=plan_list_models, uses="every_model", on_loop=True, responses={},
    summary="Every model this server offers (the default one has `default: true`).")

GET_MODEL = Endpoint(
    name="get_model", method="GET", route="/api/models/{name}", tag="models", request=ModelName,
    response=ModelInfo, plan=plan_get_model, uses="model", on_loop=True, responses={404: ERRORS[404]},
    summary="One model: config, parameter counts per component, every trace stage with its dims, and its meta.")


def plan_model_stages(context: Context, request: ModelChoice) -> Build:
    resolved = context.model
    return lambda run: stage_descriptions.describe(resolved.model)


MODEL_STAGES = Endpoint(
    name="model_stages", method="POST", route="/api/stages", tag="models", request=ModelChoice,
    response=list[StageInfo], plan=plan_model_stages, uses="model", on_loop=True,
    summary="Every trace stage of a model with its place, step, panel and dims, as GET /api/models/{name} lists "
            "them: for a registered model, or a from-scratch `config` (random weights), which has no GET of its own.")
