"""Change one thing and see why: named experiments on a model, built from trace edits.

Each changes one traced call (never the model): the edits ride on the active trace.

- no_scale:     softmax(Q·Kᵀ + bias) instead of softmax(Q·Kᵀ / √d_head + bias)
- no_mask:      every query sees every key (a decoder may look at the future)
- window W:     a query sees only keys fewer than W positions away
- temperature:  softmax(scores / T) in every attention pattern
- ablate_heads: [(layer, head), ...] contribute nothing (their z is zero); in every stack that has that
                layer, or only in `ablate_stack` ("encoder" / "decoder") of an encoder-decoder

They act on self-attention; cross-attention keeps its own keys (the source) as trained.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import torch

from model.hooks import Edit, Trace

SELF_ATTENTION = re.compile(r"^(?P<prefix>(?:\w+\.)?blocks\.(?P<layer>\d+)\.attn\.)hook_scores_raw$")


@dataclass(frozen=True)
class Interventions:
    no_scale: bool = False
    no_mask: bool = False
    window: int | None = None
    temperature: float | None = None
    ablate_heads: tuple[tuple[int, int], ...] = ()
    ablate_stack: str | None = None

    def __bool__(self) -> bool:
        return self != Interventions()

    def hooks(
        self, trace_names: Iterable[str], d_head: float, scale_by_layer: bool = False
    ) -> tuple[dict[str, list[Edit]], set[str]]:
        """(stage name -> edits in the order they apply, stages the edits read from the trace).

        trace_names: the model's stage names (Transformer.trace_names); d_head: what its scores are divided by
        the square root of (its head width, or cfg.score_scale_dim: Gemma);
        scale_by_layer: layer L divides its scores by √d_head · (L + 1) (cfg.scale_attn_by_layer).
        """
        edits: dict[str, list[Edit]] = defaultdict(list)
        needed: set[str] = set()
        trace_names = list(trace_names)
        names = set(trace_names)
        for name in trace_names:
            match = SELF_ATTENTION.match(name)
            if match is None:
                continue
            attn, layer = match["prefix"], int(match["layer"])
            if self.no_scale:
                divisor = math.sqrt(d_head) * (layer + 1 if scale_by_layer else 1)
                edits[attn + "hook_scores_scaled"].append(unscaled(attn, divisor))
                needed.add(attn + "hook_scores_raw")
            if self.no_mask:  # the softmax input without the mask: the scaled scores, soft-capped where capped
                shown = attn + ("hook_scores_capped" if attn + "hook_scores_capped" in names else "hook_scores_scaled")
                edits[attn + "hook_attn_scores"].append(unmasked(shown))
                needed.add(shown)
            if self.window is not None:
                edits[attn + "hook_attn_scores"].append(windowed(self.window))
            if self.temperature is not None:
                edits[attn + "hook_attn_scores"].append(tempered(self.temperature))
            heads = [head for at, head in self.ablate_heads if at == layer]
            in_stack = self.ablate_stack is None or attn.startswith(f"{self.ablate_stack}.")
            if heads and in_stack:
                edits[attn + "hook_z"].append(ablated(heads))
        return dict(edits), needed


def unscaled(attn: str, divisor: float) -> Edit:
    def edit(scaled: torch.Tensor, trace: Trace) -> torch.Tensor:
        raw = trace[attn + "hook_scores_raw"]  # [batch, head, q_pos, k_pos]
        return scaled + raw * (1 - 1 / divisor)  # = raw + bias: the same sum, divided by 1

    return edit


def unmasked(scores: str) -> Edit:
    def edit(_: torch.Tensor, trace: Trace) -> torch.Tensor:
        return trace[scores]  # [batch, head, q_pos, k_pos], nothing hidden

    return edit


def windowed(window: int) -> Edit:
    def edit(scores: torch.Tensor, _: Trace) -> torch.Tensor:
        q_pos = torch.arange(scores.shape[-2], device=scores.device)[:, None]
        k_pos = torch.arange(scores.shape[-1], device=scores.device)[None, :]
        far = (q_pos - k_pos).abs() >= window  # [q_pos, k_pos]; the diagonal always stays visible
        return scores.masked_fill(far, float("-inf"))

    return edit


def tempered(temperature: float) -> Edit:
    def edit(scores: torch.Tensor, _: Trace) -> torch.Tensor:
        return scores / temperature  # hidden cells stay -inf

    return edit


def ablated(heads: list[int]) -> Edit:
    def edit(z: torch.Tensor, _: Trace) -> torch.Tensor:
        keep = torch.ones(z.shape[2], dtype=z.dtype, device=z.device)
        keep[heads] = 0
        return z * keep[:, None]  # z: [batch, pos, head, d_head]

    return edit


def ablated_per_row(heads: list[int], rows: list[int] | None = None) -> Edit:
    """Row rows[i] of the batch loses head heads[i] (default rows 0, 1, ...); other rows keep every head.

    One forward pass ablates a different head in each copy of the text."""
    def edit(z: torch.Tensor, _: Trace) -> torch.Tensor:
        keep = torch.ones(z.shape[0], z.shape[2], dtype=z.dtype, device=z.device)  # [batch, head]
        keep[torch.tensor(rows if rows is not None else range(len(heads))), torch.tensor(heads)] = 0
        return z * keep[:, None, :, None]  # z: [batch, pos, head, d_head]

    return edit
