"""Activation patching: copy one activation of a clean run into a corrupted run and see how much of the
clean answer comes back.

Two prompts of the same length ("The capital of France is" / "The capital of Italy is") and two answer
tokens (" Paris" / " Rome"). The metric is the logit difference at the last position,

    d(run) = logit[clean answer] − logit[corrupted answer],

normalised so the corrupted run scores 0 and the clean run 1:

    score = (d(patched) − d(corrupted)) / (d(clean) − d(corrupted)).

A patch replaces, in the corrupted run, one stage's value at one layer (and one position, or one head) by the
clean run's value there; everything after it is recomputed. It rides on a trace edit (model/hooks.py), never
on the model. Many patched copies of the corrupted prompt run in one batch, each row with its own patch.

Knock-out: the clean run with one layer's FFN output set to zero at every position (zero ablation, not the
mean), and the probability of the clean answer that is left.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from model.device import one_row
from model.hooks import Edit, Trace, stage_name
from model.transformer import Transformer

# a grid's name -> the stage it patches
GRID_STAGES = {"residual": "resid_pre", "attention": "attn_out", "ffn": "mlp_out", "heads": "z"}
GRIDS = tuple(GRID_STAGES)
BATCH_TOKENS = 512  # rows × positions of one patched forward pass (SmolLM2: 85 copies of a 6-token prompt)
MIN_GAP = 1e-3  # d(clean) − d(corrupted) below this: 0 and 1 cannot be told apart


@dataclass(frozen=True)
class Patch:
    """The clean value of one stage copied into the corrupted run: at `layer`, at `position` (None: every
    position) and, for the heads' z, of `head` only (None: every head)."""

    stage: str  # resid_pre, attn_out, mlp_out or z
    layer: int
    position: int | None = None
    head: int | None = None


@dataclass(frozen=True)
class Grid:
    name: str  # residual, attention, ffn or heads
    rows: int  # layers
    columns: int  # positions (heads for the heads grid)
    scores: list[list[float]]  # [layer][position or head], 0 = the corrupted run, 1 = the clean run

    @property
    def per_head(self) -> bool:
        """Its columns are heads (the heads grid), not positions."""
        return self.name == "heads"


@dataclass(frozen=True)
class Knockout:
    clean_prob: float  # p(clean answer) at the last position of the clean run
    probs: list[float]  # [layer]: the same with that layer's FFN output zero at every position


# Gemma 4: every block also reads its per-layer input, an embedding of the tokens themselves, which a patched stream
# does not carry (patching the whole stream at layer 0 would not give the clean run back)
PER_LAYER_INPUTS = ("each block of this model (Gemma 4) also reads a per-layer input embedding of the tokens "
                    "themselves, which a patched residual stream does not carry: patching the whole stream at layer "
                    "0 would not give the clean run back, so the scores would not mean what they say")


def check_decoder(model: Transformer) -> None:
    if model.cfg.architecture != "decoder" or not model.cfg.lm_head:
        raise ValueError("activation patching here reads a decoder's next-token logits")
    if model.cfg.per_layer_input is not None:
        raise ValueError(PER_LAYER_INPUTS)


@torch.inference_mode()
def last_logits(model: Transformer, tokens: torch.Tensor, edits: dict[str, list[Edit]] | None = None,
                wanted: Sequence[str] = ()) -> tuple[torch.Tensor, Trace]:
    """The logits at the last position [batch, d_vocab] and the trace of `wanted`."""
    with Trace(wanted, edits) as trace:
        logits = model(tokens)  # [batch, pos, d_vocab]
    return logits[:, -1].float(), trace


def default_answers(model: Transformer, clean: Sequence[int], corrupted: Sequence[int]) -> tuple[int, int]:
    """The clean run's top token, and the corrupted run's top token other than that one."""
    check_decoder(model)
    clean_logits, _ = last_logits(model, one_row(clean, model.device))
    corrupted_logits, _ = last_logits(model, one_row(corrupted, model.device))
    clean_answer = int(clean_logits[0].argmax())
    ranked = corrupted_logits[0].argsort(descending=True)[:2].tolist()
    return clean_answer, int(ranked[0] if ranked[0] != clean_answer else ranked[1])


def patch_edits(rows: Sequence[Sequence[Patch]], clean: Trace) -> dict[str, list[Edit]]:
    """Stage name -> one edit that patches row b of the batch with rows[b]'s patches."""
    by_stage: dict[str, list[tuple[int, Patch]]] = defaultdict(list)
    for row, patches in enumerate(rows):
        for patch in patches:
            by_stage[stage_name(patch.stage, patch.layer)].append((row, patch))
    return {name: [patched(clean[name], cells)] for name, cells in by_stage.items()}


def patched(clean: torch.Tensor, cells: list[tuple[int, Patch]]) -> Edit:
    """clean: [1, pos, d_model] (or [1, pos, head, d_head] for z); each (row, patch) copies its slice."""
    def edit(value: torch.Tensor, _: Trace) -> torch.Tensor:
        value = value.clone()  # the run never modifies a tensor in place; neither does an edit
        for row, patch in cells:
            at = slice(None) if patch.position is None else patch.position
            if patch.head is None:
                value[row, at] = clean[0, at]
            else:
                value[row, at, patch.head] = clean[0, at, patch.head]
        return value

    return edit


@torch.inference_mode()
def logit_diffs(model: Transformer, clean: Sequence[int], corrupted: Sequence[int], answers: tuple[int, int],
                rows: Sequence[Sequence[Patch]], batch_tokens: int = BATCH_TOKENS) -> tuple[list[float], float, float]:
    """(d of the corrupted run patched with each row's patches, d(clean), d(corrupted)).

    d = logit[answers[0]] − logit[answers[1]] at the last position. A row of no patches is the corrupted run.
    batch_tokens: how many rows × positions run in one forward pass (the prompt's length: one row at a time).
    """
    check_decoder(model)
    if len(clean) != len(corrupted):
        raise ValueError(f"the prompts must have as many tokens: {len(clean)} and {len(corrupted)}")
    stages = sorted({stage_name(p.stage, p.layer) for patches in rows for p in patches})
    clean_ids, corrupted_ids = one_row(clean, model.device), one_row(corrupted, model.device)  # [1, pos]
    good, bad = answers

    def diff(logits: torch.Tensor) -> torch.Tensor:  # [batch, d_vocab] -> [batch]
        return logits[:, good] - logits[:, bad]

    clean_logits, clean_trace = last_logits(model, clean_ids, wanted=stages)
    corrupted_logits, _ = last_logits(model, corrupted_ids)
    per_batch = max(1, batch_tokens // len(corrupted))
    diffs: list[float] = []
    for start in range(0, len(rows), per_batch):
        chunk = rows[start:start + per_batch]
        logits, _ = last_logits(model, corrupted_ids.expand(len(chunk), -1), patch_edits(chunk, clean_trace))
        diffs += diff(logits).tolist()
    return diffs, float(diff(clean_logits)[0]), float(diff(corrupted_logits)[0])


class SameDifference(ValueError):
    """Both runs give the answers the same logit difference (e.g. two identical prompts): 0 and 1 are one point."""

    def __init__(self, clean_diff: float, corrupted_diff: float) -> None:
        super().__init__(f"both runs give the logit difference {clean_diff}")
        self.clean_diff, self.corrupted_diff = clean_diff, corrupted_diff


def normalised(diffs: Sequence[float], clean_diff: float, corrupted_diff: float) -> list[float]:
    """0 = the corrupted run, 1 = the clean run."""
    if clean_diff == corrupted_diff:
        raise SameDifference(clean_diff, corrupted_diff)
    return [(d - corrupted_diff) / (clean_diff - corrupted_diff) for d in diffs]


def grid_patches(model: Transformer, grid: str, positions: int) -> list[Patch]:
    """The cells of one grid, layer by layer: a position each, or for `heads` one head at every position."""
    stage, layers = GRID_STAGES[grid], model.cfg.n_layers
    if grid == "heads":
        return [Patch(stage, layer, head=head) for layer in range(layers) for head in range(model.cfg.n_heads)]
    return [Patch(stage, layer, position=pos) for layer in range(layers) for pos in range(positions)]


def grid_forwards(model: Transformer, grid: str, positions: int) -> int:
    """Patched forward passes of one grid: one per cell (a copy of the prompt in a batch)."""
    return model.cfg.n_layers * (model.cfg.n_heads if grid == "heads" else positions)


@dataclass(frozen=True)
class Patching:
    grids: list[Grid]
    clean_diff: float  # d(clean run)
    corrupted_diff: float  # d(corrupted run)
    nothing: float  # the score of a row patched nowhere: 0
    whole_residual: float  # of a row given the clean residual stream at layer 0's input, every position: 1


def patching_grids(model: Transformer, clean: Sequence[int], corrupted: Sequence[int], answers: tuple[int, int],
                   grids: Sequence[str], batch_tokens: int = BATCH_TOKENS) -> Patching:
    """Each grid's scores, with the two identities measured in the same batches (2 rows more)."""
    cells = {grid: grid_patches(model, grid, len(corrupted)) for grid in grids}
    rows = [[cell] for grid in grids for cell in cells[grid]] + [[], [Patch("resid_pre", 0)]]
    diffs, clean_diff, corrupted_diff = logit_diffs(model, clean, corrupted, answers, rows, batch_tokens)
    scores = normalised(diffs, clean_diff, corrupted_diff)
    out, start = [], 0
    for grid in grids:
        columns = model.cfg.n_heads if grid == "heads" else len(corrupted)
        flat = scores[start:start + len(cells[grid])]
        start += len(cells[grid])
        out.append(Grid(grid, model.cfg.n_layers, columns,
                        [flat[layer * columns:(layer + 1) * columns] for layer in range(model.cfg.n_layers)]))
    return Patching(out, clean_diff, corrupted_diff, scores[-2], scores[-1])


@torch.inference_mode()
def ffn_knockout(model: Transformer, clean: Sequence[int], answer: int) -> Knockout:
    """p(answer) at the last position of the clean run, and with each layer's FFN output zero (one row each)."""
    check_decoder(model)
    layers = model.cfg.n_layers
    ids = one_row(clean, model.device)

    def zero_row(row: int) -> Edit:
        def edit(mlp_out: torch.Tensor, _: Trace) -> torch.Tensor:  # [batch, pos, d_model]
            keep = torch.ones(mlp_out.shape[0], 1, 1, dtype=mlp_out.dtype, device=mlp_out.device)
            keep[row] = 0
            return mlp_out * keep

        return edit

    plain, _ = last_logits(model, ids)
    knocked, _ = last_logits(model, ids.expand(layers, -1),
                             {stage_name("mlp_out", layer): [zero_row(layer)] for layer in range(layers)})
    return Knockout(float(torch.softmax(plain[0], -1)[answer]), torch.softmax(knocked, -1)[:, answer].tolist())


class SameAnswers(ValueError):
    """The two answers are one token: their logit difference is always 0."""


@dataclass(frozen=True)
class TimedGrid:
    grid: Grid
    seconds: float  # its own batches, with the two identity rows


@dataclass(frozen=True)
class PatchingRun:
    """The whole experiment: the answers compared, each grid (timed apart), the identities and the knock-out."""

    answers: tuple[int, int]  # (clean, corrupted), given or the runs' defaults
    grids: list[TimedGrid]
    clean_diff: float
    corrupted_diff: float
    nothing: float  # measured in the last grid's batches
    whole_residual: float
    knockout: Knockout | None


def grids_of(choice: str) -> list[str]:
    """The grids a request's `grid` names: one, or every grid for "all"."""
    return list(GRIDS) if choice == "all" else [choice]


def patching_forwards(model: Transformer, grids: Sequence[str], positions: int, knockout: bool) -> int:
    """Patched copies of the prompt the experiment runs: each grid's cells and its two identity rows (each grid
    runs in its own batches), and one copy per layer for the knock-out."""
    forwards = sum(grid_forwards(model, grid, positions) + 2 for grid in grids)
    return forwards + (model.cfg.n_layers if knockout else 0)


def run_patching(model: Transformer, clean: Sequence[int], corrupted: Sequence[int],
                 given: tuple[int | None, int | None], grids: Sequence[str], knockout: bool,
                 batch_tokens: int = BATCH_TOKENS) -> PatchingRun:
    """The answers (the given ones, else default_answers), each grid in its own batches and timed, the contrast
    judged, and the knock-out. Raises SameAnswers, or SameDifference when the two runs' logit differences are
    closer than MIN_GAP (0 and 1 cannot be told apart)."""
    defaults = default_answers(model, clean, corrupted) if None in given else (0, 0)
    answers = (given[0] if given[0] is not None else defaults[0], given[1] if given[1] is not None else defaults[1])
    if answers[0] == answers[1]:
        raise SameAnswers("the two answers are the same token")
    timed, result = [], None
    for grid in grids:
        began = time.perf_counter()
        result = patching_grids(model, clean, corrupted, answers, [grid], batch_tokens)
        timed.append(TimedGrid(result.grids[0], time.perf_counter() - began))
    if result is None:
        raise ValueError("no grid to patch")
    if abs(result.clean_diff - result.corrupted_diff) < MIN_GAP:
        raise SameDifference(result.clean_diff, result.corrupted_diff)
    knocked = ffn_knockout(model, clean, answers[0]) if knockout else None
    return PatchingRun(answers, timed, result.clean_diff, result.corrupted_diff, result.nothing,
                       result.whole_residual, knocked)
