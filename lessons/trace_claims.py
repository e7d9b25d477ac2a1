"""The claim kinds read off the trace on screen: what a chapter asks the class to see, measured on its view.

A lesson chapter (lessons/chapters.json) names a view (model, sentence, stage, layer, head) and, as data, what
should be seen there: `{"kind": "row_top", "query": "it", "key": "animal"}`. Each kind below reads the numbers of
that view's forward pass (lessons/view.py) and answers whether the claim holds, with the values it measured
(weight 0.75 on "animal"). lessons/claims.py lists them, with the kinds that call a lab experiment
(lessons/lab_claims.py), in the one table of claim kinds.

A row's largest weight is taken per character: the byte tokens of one character count together, as the word the
class reads (analysis.words.characters).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from analysis.lens import logit_lens
from analysis.words import characters
from lessons.view import Claim, ClaimError, Values, View, covering, shown
from model.hooks import stage_name
from model.tokenizer import Token


def _pattern(view: View, cross: bool = False) -> torch.Tensor:
    """[head, q_pos, k_pos] the softmax weights of the view's layer (cross-attention when asked)."""
    name = stage_name("pattern", view.layer, stack=view.stack, cross=cross)
    if name not in view.trace:
        raise ClaimError(f"the trace has no {name}")
    return view.trace[name][0].float()


def _keys(view: View, cross: bool) -> tuple[Sequence[Token], str]:
    return (view.source_tokens, view.source_text) if cross else (view.tokens, view.text)


def _at(positions: Sequence[int]) -> str:
    """Token positions as the chart's labels number them ("4", or "22–24" for a character's byte tokens)."""
    return str(positions[0]) if len(positions) == 1 else f"{positions[0]}–{positions[-1]}"


def row_top(view: View, query: str, key: str, cross: bool = False, occurrence: int = 1) -> Claim:
    """The row of `query` puts its largest weight on `key`, counting the byte tokens of a character together
    (values: the weight on all of key's tokens, and the character or token the row peaks on, each with its
    position as the chart labels it). On a sentence without `key` the row's peak is still measured (pattern
    "free": the claim cannot hold there); a key of several characters ("2026") names the one the row peaks on
    (pattern "part")."""
    row = covering(view.tokens, view.text, query, occurrence)[-1]
    key_tokens, key_text = _keys(view, cross)
    weights = _pattern(view, cross)[view.head, row]  # [k_pos]
    groups = characters(key_tokens)
    per_group = torch.stack([weights[g].sum() for g in groups])  # [character]
    top = groups[int(per_group.argmax())]
    values: Values = {"query": query, "key": key, "row": row, "top": shown(view, top, key_tokens), "top_at": _at(top),
                      "top_weight": round(float(per_group.max()), 4)}
    if cross:  # the chart it speaks of: the decoder's rows on the encoder's keys (the page outlines its cell there)
        values["cross"] = True
    try:
        keys = covering(key_tokens, key_text, key)
    except ClaimError:  # the class's own sentence: the row's peak, and that the key is not there
        return Claim("row_top", False, values | {"pattern": "free"})
    values["weight"] = round(float(weights[keys].sum()), 4)
    if sum(set(g) <= set(keys) for g in groups) > 1:  # a key of several characters: the one it peaks on is named
        values["pattern"] = "part"
    return Claim("row_top", set(top) <= set(keys), values)


def row_over_column(view: View, query: str, key: str) -> Claim:
    """The row of `query` puts more weight on `key` than the column's baseline: the mean weight the other rows that
    can see `key` (every row after it but the query's) put on it. A head that makes every row look at a noun is not
    reading a pronoun; this is the comparison that says so (on a sentence where the referent is the second noun too,
    measured again when the class types it)."""
    row = covering(view.tokens, view.text, query)[-1]
    keys = covering(view.tokens, view.text, key)
    weights = _pattern(view)[view.head][:, keys].sum(-1)  # [q_pos] each row's weight on all of key's tokens
    others = [r for r in range(keys[-1] + 1, len(view.tokens)) if r != row]
    if row <= keys[-1] or not others:
        raise ClaimError(f"no other row after {key!r} to compare the row of {query!r} with")
    baseline = float(weights[others].mean())
    weight = float(weights[row])
    # where the chart draws the baseline: the key's column over the rows after it (the page outlines it, dashed)
    return Claim("row_over_column", weight > baseline, {
        "query": query, "key": key, "weight": round(weight, 4), "baseline": round(baseline, 4), "rows": len(others),
        "above": round(weight - baseline, 4), "text": view.text, "row": row, "key_at": _at(keys),
        "rows_from": keys[-1] + 1, "rows_to": len(view.tokens) - 1})


def row_top_heads(view: View, query: str) -> Claim:
    """Across the heads of one layer, the row of `query` peaks on more than one token: each head reads its own."""
    row = covering(view.tokens, view.text, query)[-1]
    tops = _pattern(view)[:, row].argmax(dim=-1).tolist()  # [head]
    distinct = sorted(set(tops))
    return Claim("row_top_heads", len(distinct) > 1, {
        "query": query, "distinct": len(distinct), "n_heads": len(tops),
        "tops": " · ".join(f"{i}·{shown(view, [i]) or view.tokens[i].text}" for i in distinct)})  # as the chart labels


def _target(ids: Sequence[int], i: int, pattern: str) -> int | None:
    """Where a `pattern` head's row i should peak, or None when the row has no such place."""
    if pattern == "previous-token":
        return i - 1 if i >= 1 else None
    if pattern == "induction":  # one after the most recent earlier copy of this token
        earlier = [j for j in range(i - 1) if ids[j] == ids[i]]
        return earlier[-1] + 1 if earlier and earlier[-1] + 1 < i else None
    raise ClaimError(f"unknown pattern {pattern!r}")


def rows_peak(view: View, pattern: str, at_least: float) -> Claim:
    """Of the rows that have a place for `pattern`, the share whose largest weight sits there."""
    weights = _pattern(view)[view.head]  # [q_pos, k_pos]
    ids = [t.id for t in view.tokens]
    places = [(i, _target(ids, i, pattern)) for i in range(len(ids))]
    rows = [(i, j) for i, j in places if j is not None]
    hits = sum(int(weights[i].argmax()) == j for i, j in rows)
    share = hits / len(rows) if rows else 0.0
    return Claim("rows_peak", bool(rows) and share >= at_least, {
        "pattern": pattern, "hits": hits, "rows": len(rows), "share": round(share, 4), "at_least": at_least})


def probe_best(view: View, pattern: str) -> Claim:
    """The head on screen is the one the model's head probe measured as the strongest `pattern` head."""
    if pattern == "coreference":  # its own probe (analysis.heads.coreference_scores), English sentences
        best = view.meta.get("coreference_best_head")
        if not best:
            raise ClaimError("this model has no measured coreference head")
        return Claim("probe_best", (best["layer"], best["head"]) == (view.layer, view.head), {
            "pattern": pattern, "score": best["score"], "probe": "coreference", "layer": best["layer"],
            "head": best["head"]})
    natural = (view.meta.get("natural_best_heads") or {}).get(view.lang) or {}
    best = natural.get(pattern) or (view.meta.get("best_heads") or {}).get(pattern)
    if not best:
        raise ClaimError(f"this model has no measured {pattern} head")
    probe = "natural" if natural.get(pattern) else "random"
    return Claim("probe_best", (best["layer"], best["head"]) == (view.layer, view.head), {
        "pattern": pattern, "score": best["score"], "probe": probe, "layer": best["layer"], "head": best["head"]})


def _logits(view: View) -> torch.Tensor:
    name = stage_name("logits")
    if name not in view.trace:
        raise ClaimError(f"the trace has no {name}")
    return view.trace[name][0, -1].float()  # [d_vocab] after the last token


def top_next(view: View, token: str) -> Claim:
    """The model's most likely next token, after the whole sentence, is `token`."""
    probs = torch.softmax(_logits(view), dim=-1)
    top = int(probs.argmax())
    return Claim("top_next", view.piece(top) == token, {
        "token": token, "top": view.piece(top), "probability": round(float(probs[top]), 4)})


def lens_settles(view: View, token: str) -> Claim:
    """Logit lens at the last position: from which block on `token` is the top guess (and stays so), and the
    first block whose top five guesses hold it."""
    lens = logit_lens(view.model, view.trace, k=5)
    tops = lens.top_ids[:, -1, 0].tolist()  # [layer]: embed, block 0, block 1, ...
    settle = len(tops) - 1
    while settle > 0 and tops[settle - 1] == tops[-1]:
        settle -= 1
    final = tops[-1]
    in_top5 = [i for i in range(len(tops)) if final in lens.top_ids[i, -1].tolist()]
    return Claim("lens_settles", view.piece(final) == token and settle >= 1, {
        "token": token, "block": settle - 1, "last": len(tops) - 2, "top5_block": max(in_top5[0] - 1, 0),
        "probability": round(float(lens.top_probs[-1, -1, 0]), 4)})


def masked_zero(view: View) -> Claim:
    """Every weight right of the diagonal is exactly 0, in every head of the layer."""
    weights = _pattern(view)  # [head, q_pos, k_pos]
    future = torch.ones(weights.shape[-2:], dtype=torch.bool).triu(1)
    largest = float(weights[:, future].abs().max()) if bool(future.any()) else 0.0
    return Claim("masked_zero", bool(future.any()) and largest == 0.0, {
        "cells": int(future.sum()), "n_heads": int(weights.shape[0]), "largest": largest})


def _kv_head(view: View, n_kv_heads: int) -> int:
    return view.head // (view.model.cfg.n_heads // n_kv_heads)


def weighted_sum(view: View) -> Claim:
    """z, the head's output, is its weights times the value vectors: Σ_j a_ij v_j (largest difference)."""
    a = _pattern(view)[view.head]  # [q_pos, k_pos]
    v = view.trace[view.at("v")][0].float()  # [pos, kv_head, d_head]
    z = view.trace[view.at("z")][0, :, view.head].float()  # [pos, d_head]
    error = float((a @ v[:, _kv_head(view, v.shape[1])] - z).abs().max())
    scale = float(z.abs().max())
    return Claim("weighted_sum", error <= 1e-4 * max(1.0, scale), {
        "error": error, "scale": round(scale, 4), "n_tokens": int(z.shape[0])})


def heads_split(view: View) -> Claim:
    """The query tensor is [tokens, heads, d_head], and heads × d_head is d_model, or, for a model whose heads
    have a width of their own (Gemma, Qwen3: head_dim), that width times the heads, which W_O maps to d_model."""
    _, pos, heads, d_head = view.trace[view.at("q")].shape
    cfg = view.model.cfg
    values: Values = {"n_tokens": int(pos), "n_heads": int(heads), "d_head": int(d_head), "d_model": cfg.d_model}
    if heads * d_head != cfg.d_model:  # only such a model's values carry the product (and its own sentence)
        values.update({"width": int(heads * d_head), "pattern": "own_width"})
    return Claim("heads_split", d_head == cfg.d_head and pos == len(view.tokens), values)


def kv_heads(view: View) -> Claim:
    """K and V have fewer heads than Q (GQA): each is shared by a group of query heads."""
    q = view.trace[view.at("q")].shape[2]
    kv = view.trace[view.at("k")].shape[2]
    ratio = q // kv if q % kv == 0 else round(q / kv, 2)
    return Claim("kv_heads", kv < q, {"n_heads": int(q), "n_kv": int(kv), "ratio": ratio})


def unscaled_peakier(view: View) -> Claim:
    """Without ÷√d_k the same scores give peakier rows: the mean of each row's largest weight, with and without."""
    raw = view.trace[view.at("scores_raw")][0, view.head].float()  # [q_pos, k_pos] QKᵀ, undivided
    scaled = _pattern(view)[view.head]
    hidden = ~torch.isfinite(view.trace[view.at("attn_scores")][0, view.head])  # the model's own mask (its window)
    unscaled = torch.softmax(raw.masked_fill(hidden, float("-inf")), dim=-1)
    rows = slice(1, None)  # row 0 of a causal head sees one key: its weight is 1 either way
    with_scale, without = float(scaled[rows].max(-1).values.mean()), float(unscaled[rows].max(-1).values.mean())
    values: Values = {"with_scale": round(with_scale, 4), "without": round(without, 4),
                      "sqrt_d_k": round(view.model.cfg.score_divisor(view.layer), 4)}  # √d_head, or the model's own
    if view.model.cfg.score_scale_dim is not None:  # Gemma: ÷√query_pre_attn_scalar, named in its own sentence
        dim = view.model.cfg.score_scale_dim
        values.update({"scale_dim": int(dim) if float(dim).is_integer() else dim, "pattern": "own_scale"})
    return Claim("unscaled_peakier", without > with_scale, values)


# the worked sum a class can add up by hand: the last token's first few dimensions (review 4, finding 14)
SUM_DIMS = 4


def residual_add(view: View) -> Claim:
    """The stream after attention is the stream before it plus what attention wrote: x + F(x); and, so the sum can be
    seen, the last token's first SUM_DIMS dimensions of the three (to 3 decimals, as the line prints them). An
    encoder-decoder's is read in its encoder, where the chapter's chart opens the stage (the first stack)."""
    stack, tokens = ("encoder", view.source_tokens) if view.source_tokens else (view.stack, view.tokens)
    at = lambda stage: stage_name(stage, view.layer, stack=stack)  # noqa: E731
    after = at("resid_mid_unnormed")  # Post-Norm: the sum before its norm
    after = after if after in view.trace else at("resid_mid")
    x, fx, total = (view.trace[n][0].float() for n in (at("resid_pre"), at("attn_out"), after))  # [pos, d]
    error = float((x + fx - total).abs().max())
    pos, dims = x.shape[0] - 1, min(SUM_DIMS, x.shape[-1])
    row = lambda t: "[" + ", ".join(f"{float(v):.3f}" for v in t[pos, :dims]) + "]"  # noqa: E731
    return Claim("residual_add", error <= 1e-4 * max(1.0, float(total.abs().max())), {
        "error": error, "post_norm": view.model.cfg.norm_placement == "post",
        "token": f"{pos}·{shown(view, [pos], tokens) or tokens[pos].text}", "dims": f"0–{dims - 1}",
        "before": row(x), "attn": row(fx), "after": row(total)})


def rope_turns(view: View) -> Claim:
    """RoPE turns each pair of q's dimensions by its own angle per position: the first pair fast, the last slowly.
    Read from the trace: the angle between q and rotated q at position 1, pairs (i, i + r/2) of the r = rope_dims
    dimensions RoPE turns (all of d_head unless the rotary is partial, Phi-4-mini); q as RoPE reads it, after the
    q norm where the model has one (Qwen3, Gemma 3)."""
    if view.at("rot_q") not in view.trace:
        raise ClaimError("this model does not rotate q and k (no RoPE)")
    before_rope = "norm_q" if view.at("norm_q") in view.trace else "q"
    q, rot = (view.trace[view.at(n)][0, 1, view.head].float() for n in (before_rope, "rot_q"))  # [d_head]
    half = view.model.cfg.rotary_dims // 2
    q, rot = q[: 2 * half], rot[: 2 * half]  # the dimensions past rope_dims pass through unturned
    before = torch.atan2(q[half:], q[:half])
    after = torch.atan2(rot[half:], rot[:half])
    turned = torch.remainder(after - before + math.pi, 2 * math.pi) - math.pi  # [pair] in (-π, π]
    first, last = abs(float(turned[0])), abs(float(turned[-1]))
    return Claim("rope_turns", first > 10 * last, {"first": round(first, 4), "last": round(last, 6), "pairs": half})


def ffn_width(view: View) -> Claim:
    """The FFN's hidden layer is wider than d_model (its hidden activations on screen have d_mlp columns)."""
    d_mlp = int(view.trace[view.at("pre")].shape[-1])
    d_model = view.model.cfg.d_model
    return Claim("ffn_width", d_mlp > d_model, {"d_mlp": d_mlp, "d_model": d_model, "ratio": round(d_mlp / d_model, 2)})
