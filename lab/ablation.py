"""Head ablation as an experiment: analysis/ablation.py's effects, and the check that ablating no head does nothing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from analysis.ablation import Ablation, ablation_edits, head_ablation, logits_with_edits
from analysis.lens import lm_stack
from analysis.readouts import sequence_loss
from model.device import one_row
from model.transformer import Transformer


@dataclass(frozen=True)
class CheckedAblation:
    result: Ablation
    none_loss_change: float | None  # the same edit naming no head: both must be 0
    none_prob_change: float


def ablation_with_check(model: Transformer, ids: Sequence[int], target_ids: Sequence[int] | None,
                        position: int | None) -> CheckedAblation:
    """Every head ablated alone (ids: the source; target_ids: an encoder-decoder's decoder input)."""
    tokens, target = one_row(ids, model.device), one_row(target_ids, model.device)  # [1, pos], [1, target_pos]
    result = head_ablation(model, tokens, position=position, target_tokens=target)
    none, _ = logits_with_edits(model, tokens, target, ablation_edits(lm_stack(model), 0, []))
    none_loss = sequence_loss(none, list(target_ids if target_ids is not None else ids))
    none_prob = float(torch.softmax(none[result.position], -1)[result.chosen_id])
    return CheckedAblation(result, None if none_loss is None or result.clean_loss is None
                           else none_loss - result.clean_loss, none_prob - result.clean_prob)
