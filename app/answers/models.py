"""GET /api/models and /api/models/{name}: what each model is, its config, sizes and stages described."""

from __future__ import annotations

from typing import Any

from app import stage_descriptions
from app.registry import Registry
from app.resolve import Resolved
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
