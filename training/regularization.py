"""Dropout for training steps, applied through the model's own edit mechanism.

The explorer's model has no dropout: what a learner sees is the deterministic forward pass.
Training on a corpus this small (about 0.8 M English and 0.3 M Chinese tokens) overfits
without it, so training adds it from outside: a `Trace` that records nothing and whose edits
drop out the embedding and each block's attention and FFN outputs before they join the
residual stream (the places GPT-2 puts its residual dropout). Nothing of it is saved with
the weights.
"""

from __future__ import annotations

import contextlib
import fnmatch
from collections.abc import Iterator

import torch
import torch.nn.functional as F

from model.hooks import Trace, stage_name
from model.transformer import Transformer

# what joins the residual stream: the embedding, then each block's two outputs
DROPOUT_STAGES = (stage_name("embed"), stage_name("attn_out", "*"), stage_name("mlp_out", "*"))


def dropout_stages(model: Transformer) -> list[str]:
    """The stage names of `model` that residual dropout edits."""
    return [name for name in model.hook_points if any(fnmatch.fnmatchcase(name, p) for p in DROPOUT_STAGES)]


@contextlib.contextmanager
def residual_dropout(model: Transformer, p: float) -> Iterator[None]:
    """Within this block, forward passes of `model` drop each residual-stream input with probability p.

    Only while the model is in training mode and p > 0; otherwise nothing changes."""
    if p <= 0.0 or not model.training:
        yield
        return

    def drop(x: torch.Tensor, _trace: Trace) -> torch.Tensor:
        return F.dropout(x, p, training=True)

    with Trace((), edits={name: (drop,) for name in dropout_stages(model)}):
        yield
