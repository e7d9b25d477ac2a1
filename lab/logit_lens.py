"""The logit lens as an experiment: analysis/lens.py's reading, checked against the model's own logits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from analysis.lens import LogitLens, logit_lens
from model.transformer import Transformer


def lens_with_check(model: Transformer, trace: Mapping[str, torch.Tensor], logits: torch.Tensor, *, k: int,
                    ids: Sequence[int]) -> tuple[LogitLens, float]:
    """The lens of a traced run, and max |last layer's lens logits − the run's logits [batch, pos, d_vocab]|."""
    lens = logit_lens(model, trace, k=k, ids=ids)
    return lens, float((lens.logits[-1] - logits[0].float()).abs().max())
