"""Head ablation: which heads a prediction needs, set beside where they look.

Zero one head's z (Lab I's `ablate_heads`, model/edits.py) and see how the loss and the
probability of the chosen next token move. Set beside that head's attention weights, it shows
that a high weight is not the same as importance (misconception 6): a head may stare at a token
and change nothing, and a head with diffuse weights may carry the answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

from analysis.lens import lm_stack
from analysis.readouts import sequence_loss
from model.edits import ablated, ablated_per_row
from model.hooks import Edit, Trace, stage_name
from model.transformer import Transformer

MAX_ABLATED_HEADS = 512  # each in its own copy of the text, in batched passes


@dataclass(frozen=True)
class HeadEffect:
    layer: int
    head: int
    weights: list[float]  # [k_pos] attention of the query at `position` on each token
    loss: float | None  # mean next-token loss with this head ablated (None: fewer than 2 tokens)
    loss_change: float | None  # ablated - clean
    prob: float  # probability of the chosen token at `position`, head ablated
    prob_change: float  # ablated - clean


@dataclass(frozen=True)
class Ablation:
    stack: str | None  # the LM stack, as stage names spell it: None (a single stack) or "decoder"
    position: int
    chosen_id: int
    clean_loss: float | None
    clean_prob: float
    heads: list[HeadEffect]


def ablation_edits(stack: str | None, layer: int, heads: Sequence[int]) -> dict[str, list[Edit]]:
    """Lab I's `ablate_heads` for one stack: these heads' z is zero in that layer's self-attention."""
    return {stage_name("z", layer, stack=stack): [ablated(list(heads))]} if heads else {}


@torch.inference_mode()
def logits_with_edits(
    model: Transformer,
    tokens: torch.Tensor,
    target: torch.Tensor | None,
    edits: Mapping[str, Sequence[Edit]],
    wanted: Sequence[str] = (),
) -> tuple[torch.Tensor, Trace]:
    with Trace(wanted, edits) as trace:
        logits = model(tokens, target_tokens=target) if target is not None else model(tokens)
    return logits[0].float(), trace  # [pos, d_vocab]


LOGITS_BYTES_PER_PASS = 256 * 2**20  # the logits of one batched pass; at least one layer's heads run together


def layer_groups(n_layers: int, n_heads: int, n_pos: int, d_vocab: int) -> list[range]:
    """Consecutive layers whose heads are ablated in one batched pass: as many as the logits budget allows."""
    per_layer = n_heads * n_pos * d_vocab * 4  # float32 logits of one layer's copies
    size = max(1, LOGITS_BYTES_PER_PASS // max(per_layer, 1))
    return [range(first, min(first + size, n_layers)) for first in range(0, n_layers, size)]


@torch.inference_mode()
def ablated_logits(model: Transformer, stack: str | None, resid_pre: torch.Tensor, layers: range, n_heads: int,
                   memory: torch.Tensor | None) -> torch.Tensor:
    """Logits [layer·head, pos, d_vocab]: copy i·n_heads + h of the text loses head h of layer layers[i].

    resid_pre [1, pos, d_model]: the clean stream entering layers[0]; the blocks before it are the clean
    model's for every copy, so the pass starts there (a head changes nothing below its own layer).
    """
    n_rows = len(layers) * n_heads
    edits = {stage_name("z", layer, stack=stack): [ablated_per_row(list(range(n_heads)),
                                                                   list(range(i * n_heads, (i + 1) * n_heads)))]
             for i, layer in enumerate(layers)}
    x = resid_pre.expand(n_rows, -1, -1)  # [layer·head, pos, d_model]
    with Trace((), edits):
        logits = model.logits_from(x, layers[0], stack, None if memory is None else memory.expand(n_rows, -1, -1))
    return logits.float()


def head_ablation(
    model: Transformer,
    tokens: torch.Tensor,
    *,
    position: int | None = None,
    chosen_id: int | None = None,
    target_tokens: torch.Tensor | None = None,
) -> Ablation:
    """For every self-attention head of the LM stack: its attention at `position` and the effect of zeroing it.

    tokens [1, pos] (the source, with target_tokens [1, target_pos], for encoder-decoders).
    position: the query position (default: the last). chosen_id: the next token whose
    probability is followed (default: the clean model's top prediction at `position`).
    """
    stack = lm_stack(model)
    enc_dec = model.cfg.architecture == "encoder-decoder"
    if enc_dec and target_tokens is None:
        raise ValueError("an encoder-decoder model's ablation reads the decoder: pass target_tokens")
    target = target_tokens if enc_dec else None
    read = target if target is not None else tokens
    n_layers, n_heads, n_pos = len(model.stack_named(stack).blocks), model.cfg.n_heads, read.shape[1]
    if n_layers * n_heads > MAX_ABLATED_HEADS:
        raise ValueError(f"at most {MAX_ABLATED_HEADS} heads are ablated one by one")
    position = n_pos - 1 if position is None else position
    if not 0 <= position < n_pos:
        raise ValueError(f"position must be in 0..{n_pos - 1}, got {position}")
    ids = read[0].tolist()
    patterns = [stage_name("pattern", layer, stack=stack) for layer in range(n_layers)]
    resid_pres = [stage_name("resid_pre", layer, stack=stack) for layer in range(n_layers)]
    clean, trace = logits_with_edits(model, tokens, target, {}, patterns + resid_pres)
    chosen = int(clean[position].argmax()) if chosen_id is None else chosen_id
    if not 0 <= chosen < clean.shape[-1]:
        raise ValueError(f"chosen_id must be a token id below {clean.shape[-1]}")
    clean_loss, clean_prob = sequence_loss(clean, ids), float(torch.softmax(clean[position], -1)[chosen])
    with torch.inference_mode():
        memory = model.encoder(tokens) if enc_dec else None  # [1, src_pos, d_model]: what cross-attention reads
    effects = []
    for layers in layer_groups(n_layers, n_heads, n_pos, clean.shape[-1]):
        all_logits = ablated_logits(model, stack, trace[resid_pres[layers[0]]], layers, n_heads, memory)
        for i, layer in enumerate(layers):
            pattern = trace[patterns[layer]][0, :, position]  # [head, k_pos]
            for head in range(n_heads):
                logits = all_logits[i * n_heads + head]  # [pos, d_vocab]
                loss, prob = sequence_loss(logits, ids), float(torch.softmax(logits[position], -1)[chosen])
                effects.append(
                    HeadEffect(
                        layer,
                        head,
                        pattern[head].float().tolist(),
                        loss,
                        None if loss is None or clean_loss is None else loss - clean_loss,
                        prob,
                        prob - clean_prob,
                    )
                )
    return Ablation(stack, position, chosen, clean_loss, clean_prob, effects)
