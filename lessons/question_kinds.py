"""The question kinds: what a chapter asks the class to predict before the chart is shown, answered on its numbers.

A kind is a function `(view, **its words) -> Question` (lessons/view.py): it reads the view on screen with the
same read-offs as the claim kinds (the attention rows and the cells of lessons/trace_claims.py, the logit lens of
analysis/lens.py, the KV cache's arithmetic of lab/kv_cache_size.py) and returns the right answer as a fact: a
token position, a block (or "never"), a choice, a number with its tolerance. So the answer is computed for any
sentence the class types. A question without a well-defined answer there (two tokens within MARGIN of each other,
a row that sees one key, a target that is not one token) is a QuestionError, never a guess.
lessons/questions.py lists them in the one table of question kinds.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from analysis.lens import logit_lens
from analysis.words import characters
from lab.kv_cache_size import cache_bytes, keeps_cache, shape_of
from lessons.lab_claims import _one_token
from lessons.trace_claims import _at, _keys, _pattern
from lessons.view import ClaimError, Question, QuestionError, Values, View, covering, shown, shown_token
from model.hooks import stage_name

# The smallest gap between the right answer and the next one, in attention weight (the chart prints two
# decimals): a closer race has no answer a class can be asked to predict.
MARGIN = 0.01
NUMBER_TOLERANCE = 0.01  # a count is right within 1 % (rounded down to whole numbers; at least exact)


def _row(view: View, query: str | None, occurrence: int = 1) -> tuple[int, str]:
    """The row a question asks about: the last token of `query` when the sentence has it, else the sentence's
    last token (the one that has read it all), so the question has a row on any sentence; with its word."""
    if query is not None:
        try:
            row = covering(view.tokens, view.text, query, occurrence)[-1]
            return row, query
        except ClaimError:
            pass
    row = len(view.tokens) - 1
    return row, shown_token(view, row)


def _visible(view: View, row: int, cross: bool) -> list[int]:
    """The key positions row `row` can see in the head on screen (the model's own mask: causal, a window)."""
    name = stage_name("attn_scores", view.layer, stack=view.stack, cross=cross)
    if name not in view.trace:
        raise QuestionError(f"the trace has no {name}")
    scores = view.trace[name][0, view.head, row]  # [k_pos]
    return [int(j) for j in torch.isfinite(scores).nonzero().flatten().tolist()]


def _token_options(view: View, positions: Sequence[int], cross: bool) -> tuple[dict[str, object], ...]:
    tokens, _ = _keys(view, cross)
    return tuple({"value": j, "label": tokens[j].text, "word": shown(view, [j], tokens) or tokens[j].text}
                 for j in positions)


def _count_tolerance(count: int) -> int:
    return int(count * NUMBER_TOLERANCE)


def row_top_token(view: View, query: str | None = None, cross: bool = False, occurrence: int = 1) -> Question:
    """Which token does the row of `query` (else the last token) look at most in the head on screen? A token
    pick: the character (its byte tokens together, as row_top counts them) with the largest weight; any of its
    tokens is right. Values: the row's word, the top and the runner-up with their weights."""
    row, word = _row(view, query, occurrence)
    key_tokens, _ = _keys(view, cross)
    weights = _pattern(view, cross)[view.head, row]  # [k_pos]
    seen = set(_visible(view, row, cross))
    groups = [g for g in characters(key_tokens) if set(g) & seen]
    if len(groups) < 2:
        raise QuestionError(f"the row of {word!r} sees one token only: nothing to predict")
    per_group = torch.stack([weights[g].sum() for g in groups])  # [character]
    order = per_group.argsort(descending=True).tolist()
    top, second = groups[order[0]], groups[order[1]]
    gap = float(per_group[order[0]] - per_group[order[1]])
    if gap < MARGIN:
        raise QuestionError(f"the row of {word!r} weighs two tokens within {MARGIN} of each other")
    values: Values = {"query": word, "row": row, "layer": view.layer, "head": view.head,
                      "top": shown(view, top, key_tokens), "top_at": _at(top),
                      "weight": round(float(per_group[order[0]]), 4), "second": shown(view, second, key_tokens),
                      "second_weight": round(float(per_group[order[1]]), 4)}
    return Question("row_top_token", "token", top[-1], values["weight"], values,
                    options=_token_options(view, sorted(seen), cross), accepted=tuple(top))


def lens_first_top(view: View, token: str) -> Question:
    """After which block does `token` first become the top guess at the last position (logit lens)? A block
    pick, or "never" when no block's output puts it first. Values: that block's top probability, and the final
    top guess."""
    target = _one_token(view, token)
    lens = logit_lens(view.model, view.trace, k=2)
    tops = lens.top_ids[:, -1, 0].tolist()  # [layer]: the embedding, then after block 0, 1, ...
    probs = lens.top_probs[:, -1]  # [layer, 2]
    blocks = len(tops) - 1
    first = next((i for i in range(1, len(tops)) if tops[i] == target), None)
    values: Values = {"token": token, "blocks": blocks, "last": blocks - 1, "final": view.piece(tops[-1]),
                      "final_probability": round(float(probs[-1, 0]), 4)}
    options = tuple({"value": b, "label": str(b)} for b in range(blocks)) + ({"value": "never", "label": "never"},)
    if first is None:
        return Question("lens_first_top", "block", "never", values["final"], values | {"pattern": "never"},
                        options=options, accepted=("never",))
    if float(probs[first, 0] - probs[first, 1]) < MARGIN / 10:  # a tie for first place: no block to predict
        raise QuestionError(f"{token!r} ties for the top guess after block {first - 1}")
    values |= {"block": first - 1, "probability": round(float(probs[first, 0]), 4)}
    return Question("lens_first_top", "block", first - 1, first - 1, values, options=options, accepted=(first - 1,))


def unscaled_row_peak(view: View, query: str | None = None) -> Question:
    """Without ÷√d_k, does the row of `query` (else the last token)'s largest weight go up or down? A choice,
    computed as unscaled_peakier computes the rows: the same Q·Kᵀ, the model's own mask, softmax undivided."""
    row, word = _row(view, query)
    raw = view.trace[view.at("scores_raw")][0, view.head, row].float()  # [k_pos] QKᵀ, undivided
    hidden = ~torch.isfinite(view.trace[view.at("attn_scores")][0, view.head, row])
    if int((~hidden).sum()) < 2:
        raise QuestionError(f"the row of {word!r} sees one token only: its weight is 1 either way")
    scaled = float(_pattern(view)[view.head, row].max())
    without = float(torch.softmax(raw.masked_fill(hidden, float("-inf")), dim=-1).max())
    if abs(without - scaled) < MARGIN:
        raise QuestionError(f"the row of {word!r} keeps its largest weight within {MARGIN} without ÷√d_k")
    answer = "up" if without > scaled else "down"
    values: Values = {"query": word, "row": row, "with_scale": round(scaled, 4), "without": round(without, 4),
                      "sqrt_d_k": round(view.model.cfg.score_divisor(view.layer), 4)}
    return Question("unscaled_row_peak", "choice", answer, values["without"], values,
                    options=({"value": "up", "label": "up"}, {"value": "down", "label": "down"}), accepted=(answer,))


def kv_cache_numbers(view: View) -> Question:
    """How many numbers does the KV cache hold for this sentence? The lab's arithmetic (lab/kv_cache_size.py):
    2 (K and V) · layers · kv_heads · d_head · tokens, the decoder's self-attention layers, counted in numbers
    (4 bytes each in float32). Right within NUMBER_TOLERANCE."""
    cfg = view.model.cfg
    if not keeps_cache(cfg):
        raise QuestionError("this model generates nothing, so it keeps no KV cache")
    shape = shape_of("on screen", cfg)
    n_tokens = len(view.tokens)
    numbers = cache_bytes(shape, context=n_tokens, dtype="float32") // 4
    values: Values = {"numbers": numbers, "layers": shape.layers, "kv_heads": shape.kv_heads, "d_head": shape.d_head,
                      "n_tokens": n_tokens, "tolerance": _count_tolerance(numbers)}
    if shape.sliding_window is not None and n_tokens > shape.sliding_window:  # the window caps what is kept
        values |= {"pattern": "window", "window": shape.sliding_window}
    return Question("kv_cache_numbers", "number", numbers, numbers, values, tolerance=_count_tolerance(numbers))


def q_numbers(view: View) -> Question:
    """How many numbers does the query tensor of the layer on screen hold for this sentence? Read off the
    trace's q: [tokens, heads, d_head]. Right within NUMBER_TOLERANCE."""
    _, pos, heads, d_head = view.trace[view.at("q")].shape
    numbers = int(pos * heads * d_head)
    values: Values = {"numbers": numbers, "n_tokens": int(pos), "n_heads": int(heads), "d_head": int(d_head),
                      "tolerance": _count_tolerance(numbers)}
    return Question("q_numbers", "number", numbers, numbers, values, tolerance=_count_tolerance(numbers))


def masked_cells(view: View) -> Question:
    """How many weights of the head on screen does the mask set to exactly 0? Counted off the trace: the cells
    whose score the model's mask hid (−∞), each of which must weigh 0. Exact (tolerance 0)."""
    scores = view.trace[view.at("attn_scores")][0, view.head]  # [q_pos, k_pos]
    hidden = ~torch.isfinite(scores)
    weights = _pattern(view)[view.head]
    cells = int(hidden.sum())
    if cells and float(weights[hidden].abs().max()) != 0.0:
        raise QuestionError("a hidden cell has a weight other than 0")
    n = int(scores.shape[-1])
    values: Values = {"cells": cells, "n_tokens": n, "total": n * int(scores.shape[-2])}
    return Question("masked_cells", "number", cells, cells, values)


def residual_grows(view: View, query: str | None = None) -> Question:
    """After attention adds its output (x + F(x)), is the stream at the row of `query` (else the last token)
    longer or shorter than before? A choice, read off resid_pre and the sum (before a Post-Norm's norm)."""
    row, word = _row(view, query)
    after = view.at("resid_mid_unnormed")
    after = after if after in view.trace else view.at("resid_mid")
    before_norm = float(view.trace[view.at("resid_pre")][0, row].float().norm())
    after_norm = float(view.trace[after][0, row].float().norm())
    change = (after_norm - before_norm) / max(before_norm, 1e-12)
    if abs(change) < MARGIN:
        raise QuestionError(f"the stream of {word!r} keeps its length within {MARGIN:.0%}")
    answer = "longer" if change > 0 else "shorter"
    values: Values = {"query": word, "row": row, "before": round(before_norm, 4), "after": round(after_norm, 4),
                      "change": round(100 * change, 1)}
    return Question("residual_grows", "choice", answer, values["after"], values,
                    options=({"value": "longer", "label": "longer"}, {"value": "shorter", "label": "shorter"}),
                    accepted=(answer,))
