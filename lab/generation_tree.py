"""Greedy generation watched token by token: each step's most likely tokens, the layer at which each generated
token committed under the logit lens, and a small tree: the top alternatives at one step, each continued greedily.

Every token comes from the one decoding loop (model/generate.py decode(), temperature 0: the argmax of the
one sampler); the lens is analysis/lens.py's.

The commitment layer of a generated token t, read at the position before it: the first lens layer L ("embed",
then after block 0, 1, ...) such that t is the lens's top-1 at L and at every later layer. The last layer's lens
is the model's own logits, so a greedy token is top-1 there and commits at the last layer at the latest
(None only when it is not: a tie, or the lens disagreeing with the loop's logits).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from analysis.lens import lens_stage_names, logit_lens
from model.device import one_row
from model.generate import Step, decode, generate
from model.transformer import Transformer

TOP = 5  # most likely tokens listed per step
BRANCHES = 3  # alternatives continued at the branch step


@dataclass(frozen=True)
class GeneratedStep:
    id: int  # the greedy token
    top_ids: list[int]  # the step's TOP most likely tokens (the greedy one first) ...
    top_probs: list[float]  # ... and their probabilities, from the loop's own logits
    committed: int | None  # index into the lens's layers of the commitment layer (None: not top-1 at the last)
    lens_probs: list[float]  # [layer] the lens's probability of this token after each block
    lens_top: list[int]  # [layer] the lens's top-1 after each block


@dataclass(frozen=True)
class Branch:
    ids: list[int]  # the alternative taken at the branch step, then its greedy continuation
    prob: float  # the alternative's probability at the branch step


@dataclass(frozen=True)
class GenerationTree:
    layers: list[str]  # the lens's layers: "embed", "0", "1", ...
    steps: list[GeneratedStep]
    branch_step: int
    branches: list[Branch]  # the step's top BRANCHES tokens, most likely (the greedy one) first
    max_diff_last: float  # max |last layer's lens logits − the loop's logits| over the steps
    forwards: int  # forward passes run, one per row per step (the lens's traced pass counts one)


def forwards_needed(max_new_tokens: int, branch_tokens: int) -> int:
    """The forward passes a tree costs at most: one per greedy step, one traced pass for the lens, and
    BRANCHES rows per step of the tree (batched, counted per row)."""
    return max_new_tokens + 1 + BRANCHES * branch_tokens


def commitment(lens_top: Sequence[int], token: int) -> int | None:
    """The first layer from which `token` is top-1 at every later layer (lens_top: [layer] top-1 ids)."""
    if not lens_top or lens_top[-1] != token:
        return None
    layer = len(lens_top) - 1
    while layer > 0 and lens_top[layer - 1] == token:
        layer -= 1
    return layer


@torch.inference_mode()
def generation_tree(model: Transformer, ids: Sequence[int], target_ids: Sequence[int] | None, *,
                    max_new_tokens: int, branch_step: int, branch_tokens: int) -> GenerationTree:
    """Greedy steps from `ids` (a decoder) or `target_ids` (an encoder-decoder's decoder input; the source `ids`
    stay fixed), their commitment layers, and BRANCHES alternatives at `branch_step` continued `branch_tokens`."""
    enc_dec = model.cfg.architecture == "encoder-decoder"
    if enc_dec and target_ids is None:
        raise ValueError("an encoder-decoder model generates on its decoder: pass target_ids")
    read = list(target_ids) if enc_dec and target_ids is not None else list(ids)
    logits: list[torch.Tensor] = []  # [d_vocab] per step, the loop's own

    def keep(step: Step) -> None:
        logits.append(step.logits[0].float())

    generated = generate(model, ids, target_ids=read if enc_dec else None, max_new_tokens=max_new_tokens,
                         temperature=0.0, on_step=keep)
    if not 0 <= branch_step < len(generated):
        raise ValueError(f"branch_step {branch_step} is not one of the {len(generated)} generated steps")

    # the lens reads the position before each generated token: one traced pass over all but the last of them
    device = model.device
    sequence = one_row(read + generated[:-1], device)  # [1, pos]
    source = one_row(ids, device)  # [1, source_pos]
    stages = lens_stage_names(model)
    _, trace = (model.run_with_trace(source, stages, target_tokens=sequence) if enc_dec
                else model.run_with_trace(sequence, stages))
    steps: list[GeneratedStep] = []
    max_diff = 0.0
    for i, (token, step_logits) in enumerate(zip(generated, logits, strict=True)):
        at = len(read) - 1 + i
        # one position at a time: [layer, 1, d_vocab] (all of them at once is layers × tokens × vocabulary)
        lens = logit_lens(model, {name: trace[name][:, at:at + 1] for name in stages}, k=1)
        lens_probs = torch.softmax(lens.logits[:, 0], dim=-1)[:, token]  # [layer]
        lens_top = lens.top_ids[:, 0, 0].tolist()  # [layer]
        max_diff = max(max_diff, float((lens.logits[-1, 0] - step_logits).abs().max()))
        top = torch.softmax(step_logits, dim=-1).topk(min(TOP, step_logits.shape[-1]))
        steps.append(GeneratedStep(token, top.indices.tolist(), top.values.tolist(), commitment(lens_top, token),
                                   lens_probs.tolist(), lens_top))

    # the tree: the branch step's top BRANCHES tokens, each continued greedily, as one batch of the loop
    chosen = steps[branch_step]
    firsts = chosen.top_ids[:BRANCHES]
    rows = torch.tensor([read + generated[:branch_step] + [first] for first in firsts], device=device)  # [row, pos]
    if enc_dec:
        continued = decode(model, source.expand(len(firsts), -1), rows, max_new_tokens=branch_tokens,
                           temperature=0.0)
    else:
        continued = decode(model, rows, max_new_tokens=branch_tokens, temperature=0.0)
    branches = [Branch([first] + more, prob) for first, more, prob in
                zip(firsts, continued, chosen.top_probs, strict=False)]
    forwards = len(generated) + 1 + len(firsts) * max((len(more) for more in continued), default=0)
    return GenerationTree(lens.layers, steps, branch_step, branches, max_diff, forwards)
