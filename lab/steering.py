"""Steering with a difference vector: the mean residual stream of prompts A minus that of prompts B, at the input
of one block, added back (times α) at every position while the model writes greedily.

    v = mean_{p ∈ A} mean_t x_L(p)_t  −  mean_{p ∈ B} mean_t x_L(p)_t        x_L = block L's resid_pre  [d_model]
    x_L ← x_L + α·v   at every position, every step

ActAdd (Turner et al. 2023) adds the difference of one pair of prompts; a mean over a few prompts per side, as
later mean-difference steering does, keeps less of what any one sentence happens to say.

Where: the input of block L (its `resid_pre`, before ln1): what layers 0..L-1 wrote, the stream block L reads.
Which positions: the mean over every position of a prompt after the first, not its last one alone. A set here is
a style (French, a bad review) present at every token, and the vector is added at every token; the last position
of a sentence is mostly its full stop and whatever comes next, and with 1 to 8 prompts a mean over all tokens is
far less noisy. The first position is left out: it sees only itself (a start token is the same in every prompt),
and it is where a model parks the attention it does not need (an attention sink), with a residual norm many times
the others' (SmolLM2 on "I went to the market this morning.": 4× at blocks 3 and 6, 170× at block 12, 108× at
block 20), which says little about the text.

Generation is model/generate.py's one loop, with the addition as a position-wise edit: it keeps the KV cache
(the cached positions were steered when they were computed), and α = 0 adds nothing, token for token.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from model.device import one_row
from model.generate import Step, generate
from model.hooks import Edit, Trace, stage_name
from model.transformer import Transformer

TOP = 5  # tokens listed before and after: each side's most likely (their union)


@dataclass(frozen=True)
class Residuals:
    mean: torch.Tensor  # [d_model], the mean over the set's prompts of each prompt's mean over its positions
    norms: list[float]  # ‖x_L‖ at every position averaged, over every prompt


@dataclass(frozen=True)
class Steered:
    vector: torch.Tensor  # [d_model]: mean(A) − mean(B)
    vector_norm: float
    typical_norm: float  # the mean ‖x_L‖ over the positions of both sets: the scale α·‖v‖ is measured against
    plain_ids: list[int]  # greedy, without the vector
    steered_ids: list[int]  # greedy, with α·v added at every position of layer L
    plain_probs: torch.Tensor  # [d_vocab] the first generated step's next-token distribution, without ...
    steered_probs: torch.Tensor  # [d_vocab] ... and with the vector
    steered_logits: torch.Tensor  # [d_vocab] the first step's steered logits (the HF reference compares these)
    top_ids: list[int]  # the union of both sides' TOP most likely first tokens, most likely (steered) first


@torch.inference_mode()
def set_residuals(model: Transformer, prompts: Sequence[Sequence[int]], layer: int) -> Residuals:
    """The set's mean resid_pre of block `layer`: each prompt's mean over its positions after the first, then the
    mean over the prompts (so a long prompt counts as much as a short one)."""
    name = stage_name("resid_pre", layer)
    means, norms = [], []
    for ids in prompts:
        if len(ids) < 2:
            raise ValueError("a prompt needs a token after its first")
        with Trace([name]) as trace:
            model(one_row(ids, model.device))
        x = trace[name][0, 1:].float()  # [pos, d_model]
        means.append(x.mean(0))  # [d_model]
        norms.extend(x.norm(dim=-1).tolist())
    return Residuals(torch.stack(means).mean(0), norms)  # [d_model]


def added(vector: torch.Tensor) -> Edit:
    """x ← x + vector at every position (each position on its own: the cache keeps it)."""
    def edit(x: torch.Tensor, _: Trace) -> torch.Tensor:
        return x + vector.to(x.dtype)  # x: [batch, pos, d_model]

    return edit


def steering_edits(layer: int, vector: torch.Tensor, alpha: float) -> dict[str, list[Edit]]:
    """The position-wise edit of model/generate.py's decode(): α·vector added to block `layer`'s input."""
    return {stage_name("resid_pre", layer): [added(alpha * vector)]}


def greedy_with_first(model: Transformer, ids: Sequence[int], max_new_tokens: int,
                      edits: dict[str, list[Edit]] | None, use_cache: bool = True) -> tuple[list[int], torch.Tensor]:
    """Greedy new ids after `ids` (the one decoding loop) and its first step's logits [d_vocab]."""
    first: list[torch.Tensor] = []

    def watch(step: Step) -> None:
        if step.index == 0:
            first.append(step.logits[0].float())

    new = generate(model, ids, max_new_tokens=max_new_tokens, temperature=0.0, position_edits=edits,
                   use_cache=use_cache, on_step=watch)
    return new, first[0]


def steer(model: Transformer, a: Sequence[Sequence[int]], b: Sequence[Sequence[int]], layer: int, alpha: float,
          ids: Sequence[int], max_new_tokens: int) -> Steered:
    """The difference vector of sets `a` and `b` at block `layer`'s input, and greedy text after `ids` without and
    with α times it."""
    if model.cfg.architecture != "decoder" or not model.cfg.lm_head:
        raise ValueError("steering writes text with a decoder's one stack")
    if not 0 <= layer < model.cfg.n_layers:
        raise ValueError(f"layer {layer} is not in 0..{model.cfg.n_layers - 1}")
    with_a, with_b = set_residuals(model, a, layer), set_residuals(model, b, layer)
    vector = with_a.mean - with_b.mean  # [d_model]
    norms = with_a.norms + with_b.norms
    plain, plain_logits = greedy_with_first(model, ids, max_new_tokens, None)
    steered, steered_logits = greedy_with_first(model, ids, max_new_tokens, steering_edits(layer, vector, alpha))
    plain_probs = torch.softmax(plain_logits.double(), -1)  # [d_vocab]
    steered_probs = torch.softmax(steered_logits.double(), -1)  # [d_vocab]
    k = min(TOP, plain_probs.shape[-1])
    union = dict.fromkeys(steered_probs.topk(k).indices.tolist() + plain_probs.topk(k).indices.tolist())
    return Steered(vector, float(vector.norm()), sum(norms) / len(norms), plain, steered, plain_probs,
                   steered_probs, steered_logits, list(union))
