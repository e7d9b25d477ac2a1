"""The one list of lab experiments: each drives its route (app/routers/lab.py), its panel on the lab page
(app/routers/pages.py, templates/lab.html; the page imports static/js/lab/panels/<panel>.js) and its entry in
GET /api/lab/experiments. To add an experiment: its numbers in lab/<name>.py, its request, response,
checks and build in app/lab/<name>.py (ending in `EXPERIMENT = Experiment(...)`), one line here, its panel
in static/js/lab/panels/<panel>.js and its texts. tests/app/test_lab_experiments.py keeps them in step.
"""

from __future__ import annotations

from typing import Any

from app.lab import (
    ablation,
    attention_flow,
    complexity,
    flash,
    generate,
    head_count,
    kv_cache,
    linear_attention,
    logit_lens,
    masks,
    norm_placement,
    objectives,
    parameters,
    positions,
    sampling,
    scaling,
)
from app.lab.common import Experiment

# in the lab page's order
EXPERIMENTS: tuple[Experiment[Any], ...] = (
    scaling.EXPERIMENT,
    masks.EXPERIMENT,
    positions.EXPERIMENT,
    parameters.EXPERIMENT,
    sampling.EXPERIMENT,
    complexity.EXPERIMENT,
    flash.EXPERIMENT,
    kv_cache.EXPERIMENT,
    generate.EXPERIMENT,
    norm_placement.EXPERIMENT,
    logit_lens.EXPERIMENT,
    ablation.EXPERIMENT,
    linear_attention.EXPERIMENT,
    objectives.EXPERIMENT,
    head_count.EXPERIMENT,
    attention_flow.EXPERIMENT,
)

__all__ = ["EXPERIMENTS", "Experiment"]
