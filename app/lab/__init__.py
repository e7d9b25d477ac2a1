"""The one list of lab experiments: each drives its route (app/routers/lab.py), its panel on the lab page
(app/lab_panels.py, app/routers/pages.py, templates/lab.html: the page imports static/js/lab/panels/<name>.js and
asks where the server says) and its entry in GET /api/lab/experiments. One name per experiment: its modules, panel,
texts, URL fields and (kebab-case) route. The recipe is docs/ARCHITECTURE.md's "Add a lab experiment";
tests/test_recipes.py and tests/app/test_lab_experiments.py keep every experiment's files, tests, texts and
declared refusals in step.
"""

from __future__ import annotations

from typing import Any

from app.lab import (
    ablation,
    activation_patching,
    attention_flow,
    batch_shapes,
    cached_decoding,
    complexity,
    embedding_persistence,
    flash,
    generation_tree,
    head_count,
    kv_cache_size,
    linear_attention,
    logit_attribution,
    logit_lens,
    masks,
    nope_attention,
    norm_placement,
    norm_statistics,
    objectives,
    parameters,
    positions,
    quantization,
    recurrence,
    sampling,
    scaling,
    steering,
)
from app.lab.common import Experiment

# in the lab page's order
EXPERIMENTS: tuple[Experiment[Any], ...] = (
    scaling.EXPERIMENT,
    masks.EXPERIMENT,
    positions.EXPERIMENT,
    nope_attention.EXPERIMENT,
    parameters.EXPERIMENT,
    sampling.EXPERIMENT,
    complexity.EXPERIMENT,
    flash.EXPERIMENT,
    kv_cache_size.EXPERIMENT,
    cached_decoding.EXPERIMENT,
    generation_tree.EXPERIMENT,
    norm_placement.EXPERIMENT,
    norm_statistics.EXPERIMENT,
    logit_lens.EXPERIMENT,
    embedding_persistence.EXPERIMENT,
    ablation.EXPERIMENT,
    linear_attention.EXPERIMENT,
    objectives.EXPERIMENT,
    head_count.EXPERIMENT,
    batch_shapes.EXPERIMENT,
    attention_flow.EXPERIMENT,
    recurrence.EXPERIMENT,
    steering.EXPERIMENT,
    activation_patching.EXPERIMENT,
    logit_attribution.EXPERIMENT,
    quantization.EXPERIMENT,
)

# Experiments renamed so that each name says what it is, by their old names. Each old route
# (/api/lab/<old-name>, kebab-case) still answers as its experiment does, marked deprecated in the OpenAPI schema
# (app/routers/lab.py); the old panel names are the experiments' aliases.
RENAMED: dict[str, Experiment[Any]] = {
    "generate": cached_decoding.EXPERIMENT,  # decoding with a KV cache, step by step
    "kv_cache": kv_cache_size.EXPERIMENT,  # the cache's bytes
}

__all__ = ["EXPERIMENTS", "RENAMED", "Experiment"]
