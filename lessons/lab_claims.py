"""The claim kinds read off a lab experiment's numbers, beside those read off the trace (lessons/trace_claims.py).

A chapter that links a lab panel can check, on its own view, a number that panel shows: the gradient through
softmax with and without ÷√d_k (the scaling panel), FlashAttention's memory traffic against the standard
kernel's (the flash panel), direct logit attribution's largest head (logit_attribution), activation
patching's best head and where the answer moves between positions (activation_patching). Each kind calls the
experiment's own function (lab/<name>.py), so the line in the lesson bar and the panel print the same
computation. lessons/claims.py lists them in the one table of claim kinds.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import torch

from lab import scaling
from lab.activation_patching import Patch, default_answers, logit_diffs, normalised, patching_grids
from lab.deltanet_head import SHIPPED_HYBRID, DeltaNetHead, NotDeltaNet, deltanet_head, shipped_hybrid, text_tokens
from lab.flash import flash_traffic, standard_traffic
from lab.logit_attribution import NotAdditive, logit_attribution
from lessons.view import Claim, ClaimError, View, covering, shown_token
from model.hooks import stage_name
from model.transformer import Transformer

MIB = 2 ** 20


def softmax_gradient(view: View) -> Claim:
    """Without ÷√d_k the rows saturate and the gradient through softmax shrinks: ‖∂softmax/∂scores‖ per query
    row by autograd, the mean over the rows and the heads of the layer on screen, with and without the divisor
    (the scaling panel's "gradient through softmax" for this layer)."""
    raw = view.trace[view.at("scores_raw")][0]  # [head, q_pos, k_pos] Q·Kᵀ, undivided
    scores = view.trace[view.at("attn_scores")][0]  # the softmax input: scaled, biased, masked
    stats = scaling.head_statistics(raw, scores, view.model.cfg.score_divisor(view.layer))
    with_scale = sum(stats["jacobian_scaled"]) / len(stats["jacobian_scaled"])
    without = sum(stats["jacobian_unscaled"]) / len(stats["jacobian_unscaled"])
    return Claim("softmax_gradient", without < with_scale, {
        "with_scale": round(with_scale, 4), "without": round(without, 4),
        "ratio": round(with_scale / max(without, 1e-12), 1), "n_heads": len(stats["jacobian_scaled"])})


def flash_traffic_saves(view: View, n: int = 16384, block_q: int = 128, dtype_bytes: int = 2) -> Claim:
    """FlashAttention moves fewer bytes between main memory and the chip than the standard kernel, per head at
    n queries × n keys with this model's d_head (the flash panel's traffic curves, float16 by default)."""
    if n < 1 or block_q < 1 or dtype_bytes not in (2, 4):
        raise ClaimError("flash_traffic_saves needs n ≥ 1, block_q ≥ 1 and 2 or 4 bytes per number")
    d_head = view.model.cfg.d_head
    standard = standard_traffic(n, n, d_head).total * dtype_bytes
    tiled = flash_traffic(n, n, d_head, block_q).total * dtype_bytes
    return Claim("flash_traffic_saves", tiled < standard, {
        "n": n, "d_head": d_head, "block_q": block_q, "standard_mib": round(standard / MIB),
        "flash_mib": round(tiled / MIB), "ratio": round(standard / tiled, 1)})


# ---------------------------------------------------------------- why did it say that (issue 31)


def _ids(view: View) -> list[int]:
    return [t.id for t in view.tokens]


def _one_token(view: View, text: str) -> int:
    """The id of `text` when it is one token of this model (" Paris"), else a ClaimError naming the split."""
    if view.encode is None:
        raise ClaimError("this view cannot tokenize a second text")
    ids = [t.id for t in view.encode(text) if t.end > t.start]
    if len(ids) != 1:
        raise ClaimError(f"{text!r} is {len(ids)} tokens of this model, not one")
    return ids[0]


def _corrupted(view: View, corrupted: str) -> list[int]:
    if view.encode is None:
        raise ClaimError("this view cannot tokenize a second text")
    ids = [t.id for t in view.encode(corrupted)]
    if len(ids) != len(view.tokens):
        raise ClaimError(f"{corrupted!r} has {len(ids)} tokens and the view's sentence {len(view.tokens)}: "
                         "patching needs as many")
    return ids


def attribution_head(view: View, token: str, versus: str | None = None) -> Claim:
    """Direct logit attribution of `token` at the last position (the logit_attribution panel): the head on screen
    is the head with the largest part, and the key it reads most of that part from; with the largest FFN part and
    the totals of all heads and all FFNs, since attribution is no ranking of causes."""
    logits = view.trace[stage_name("logits")].float()  # [1, pos, d_vocab]
    target = _one_token(view, token)
    other = _one_token(view, versus) if versus else None
    try:
        split = logit_attribution(view.model, view.trace, logits, position=len(view.tokens) - 1, target=target,
                                  versus=other, top=1)
    except NotAdditive as error:
        raise ClaimError(str(error)) from error
    heads = split.heads  # [layer, head]
    best = int(heads.abs().flatten().argmax())
    layer, head = divmod(best, heads.shape[1])
    sources = torch.tensor(split.top[0].sources)  # [k_pos]
    source = int(sources.argmax())
    ffn_layer = int(split.ffn.argmax())
    return Claim("attribution_head", (layer, head) == (view.layer, view.head), {
        "token": token, "versus": versus or "", "logit": round(split.logit, 4), "layer": layer, "head": head,
        "contribution": round(float(heads[layer, head]), 4), "source": shown_token(view, source),
        "from_source": round(float(sources[source]), 4), "ffn_layer": ffn_layer,
        "ffn_value": round(float(split.ffn[ffn_layer]), 4), "heads_total": round(float(heads.sum()), 4),
        "ffn_total": round(float(split.ffn.sum()), 4)})


@lru_cache(maxsize=8)
def _heads_grid(model: Transformer, clean: tuple[int, ...], corrupted: tuple[int, ...]) -> tuple[
        tuple[int, int], list[list[float]]]:
    """The activation_patching panel's heads grid for the pair (its default answers); EN and ZH share one run."""
    answers = default_answers(model, clean, corrupted)
    grid = patching_grids(model, clean, corrupted, answers, ["heads"]).grids[0]
    return answers, grid.scores


def patching_head(view: View, corrupted: str, at_least: float = 0.5) -> Claim:
    """Activation patching against `corrupted` (the activation_patching panel's heads grid: one head's output
    copied from the clean run at every position): the head on screen restores the most, at least `at_least` of the
    clean answer's logit difference."""
    answers, scores = _heads_grid(view.model, tuple(_ids(view)), tuple(_corrupted(view, corrupted)))
    flat = torch.tensor(scores)  # [layer, head]
    order = flat.flatten().argsort(descending=True).tolist()
    layer, head = divmod(order[0], flat.shape[1])
    second = divmod(order[1], flat.shape[1])
    score = float(flat[layer, head])
    return Claim("patching_head", (layer, head) == (view.layer, view.head) and score >= at_least, {
        "corrupted": corrupted, "clean_answer": view.piece(answers[0]), "corrupted_answer": view.piece(answers[1]),
        "layer": layer, "head": head, "score": round(score, 4), "second_layer": second[0], "second_head": second[1],
        "second_score": round(float(flat[second]), 4), "at_least": at_least})


@lru_cache(maxsize=8)
def _handover(model: Transformer, clean: tuple[int, ...], corrupted: tuple[int, ...], at: int) -> tuple[
        list[float], list[float]]:
    """The residual grid's two columns that matter: position `at` and the last, at every layer's input."""
    answers = default_answers(model, clean, corrupted)
    layers, last = model.cfg.n_layers, len(clean) - 1
    rows: Sequence[Sequence[Patch]] = [[Patch("resid_pre", layer, position=p)] for p in (at, last)
                                       for layer in range(layers)]
    diffs, clean_diff, corrupted_diff = logit_diffs(model, clean, corrupted, answers, rows)
    scores = normalised(diffs, clean_diff, corrupted_diff)
    return scores[:layers], scores[layers:]


def patching_handover(view: View, corrupted: str, word: str) -> Claim:
    """Patching the residual stream (the activation_patching panel's residual grid) at `word`, the word the two
    prompts differ in, and at the last position: up to some layer's input only `word`'s stream restores the
    answer (more than half), from the next layer on only the last position's: the layer in between moved it."""
    at = covering(view.tokens, view.text, word)[-1]
    subject, last = _handover(view.model, tuple(_ids(view)), tuple(_corrupted(view, corrupted)), at)
    through = max((i for i, s in enumerate(subject) if s > 0.5), default=-1)
    from_layer = min((i for i, s in enumerate(last) if s > 0.5), default=len(last))
    return Claim("patching_handover", through >= 0 and from_layer == through + 1, {
        "corrupted": corrupted, "word": word, "last_word": shown_token(view, len(view.tokens) - 1),
        "through": through, "from_layer": from_layer, "subject_score": round(subject[max(through, 0)], 4),
        "last_score": round(last[min(from_layer, len(last) - 1)], 4), "last_layer": len(last) - 1})


@torch.inference_mode()
def fact_missing(view: View, text: str, answer: str, below: int = 10) -> Claim:
    """On another prompt (a Chinese fact sentence), the answer's first token is not among the model's `below` most
    likely next tokens: the model does not show the fact there (values: its rank and probability, the top token)."""
    if view.encode is None:
        raise ClaimError("this view cannot tokenize a second text")
    prompt = [t.id for t in view.encode(text)]
    longer = [t.id for t in view.encode(text + answer)]
    if longer[:len(prompt)] != prompt or len(longer) == len(prompt):
        raise ClaimError(f"{text!r} + {answer!r} does not tokenize as the prompt followed by the answer")
    first = longer[len(prompt)]  # the answer's first token after the prompt
    probs = torch.softmax(view.model(torch.tensor([prompt], device=view.model.device))[0, -1].float(), dim=-1)
    rank = int((probs > probs[first]).sum()) + 1
    top = int(probs.argmax())
    return Claim("fact_missing", rank > below, {
        "text": text, "answer": answer, "rank": rank, "probability": round(float(probs[first]), 4),
        "top": view.piece(top), "top_probability": round(float(probs[top]), 4), "below": below})


# ---------------------------------------------------------------- the RNN came back (issue 43)


@lru_cache(maxsize=8)
def _deltanet_head(model: Transformer, ids: tuple[int, ...], layer: int, head: int) -> DeltaNetHead:
    try:
        return deltanet_head(model, list(ids), layer, head)
    except NotDeltaNet as error:
        raise ClaimError(str(error)) from error


def deltanet_state(view: View, layer: int, head: int, model: str = SHIPPED_HYBRID) -> Claim:
    """A real gated DeltaNet head (the linear_attention panel's real head) on the view's sentence: its state S is a
    d_value × d_key matrix of the same size after half the sentence's tokens as after all of them, while the
    model's attention layer keeps K and V for every token (its cache grows by a fixed amount per token), and the
    last token changed S (by more than 0, at most 2 of its size). On the view's own model when it is a hybrid, else
    on `model`, the shipped hybrid, reading the sentence with its own tokenizer."""
    if view.model.cfg.hybrid:
        hybrid, ids, name = view.model, [t.id for t in view.tokens], str(view.meta.get("name") or "")
    elif model == SHIPPED_HYBRID:
        loaded = shipped_hybrid()
        hybrid, ids, name = loaded.model, [t.id for t in text_tokens(loaded, view.text)], model
    else:
        raise ClaimError(f"deltanet_state reads the view's own hybrid or the shipped {SHIPPED_HYBRID}, not {model!r}")
    real = _deltanet_head(hybrid, tuple(ids), layer, head)
    change = real.last_change
    fixed = real.half_state_shape == tuple(real.state.shape) and real.half_tokens < real.n_tokens
    holds = fixed and real.kv_per_token > 0 and 0.0 < change <= 2.0
    return Claim("deltanet_state", holds, {
        "model": name, "layer": layer, "head": head, "d_value": real.d_value, "d_key": real.d_key,
        "state_numbers": real.state_numbers, "tokens": real.n_tokens, "half": real.half_tokens,
        "attn_layer": real.attention_layer if real.attention_layer is not None else -1,
        "kv_per_token": real.kv_per_token, "kv_numbers": real.kv_numbers, "layer_state": real.layer_state_numbers,
        "crossover": real.crossover or 0, "change_pct": round(100 * change)})
