"""Three pre-training objectives on one sentence, at the same compute: what each learns from one forward pass.

- Causal language modelling (GPT): one pass of a decoder gives a loss at every position,
  −log p(token_{i+1} | tokens_≤i), measured here from the model's own logits.
- Masked language modelling (BERT): a seeded 15% of the positions are chosen; only they carry a loss.
  The count is BERT's data recipe, max(1, round(0.15 · n)) (Devlin et al. 2019, create_pretraining_data).
- Span corruption (T5): 15% of the tokens in spans of mean length 3, each span replaced by one sentinel;
  the target is each span's sentinel and its tokens (Raffel et al. 2020, random_spans_noise_mask).
  Both counts come from the formulas: no BERT or T5 head runs here.

Compute: a forward pass costs about 2 · N FLOPs per token, N the non-embedding parameters (Kaplan et
al. 2020), whatever the objective; T5 compares an encoder-decoder with N in each stack, which costs the
same per token as a decoder of N. Generation: with a KV cache a decoder feeds each position once; a
bidirectional encoder must rerun every position at every step, because earlier positions see later ones.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from model.device import one_row
from model.transformer import Transformer

MASK_RATE = 0.15  # BERT's masked_lm_prob, T5's noise_density
MEAN_SPAN = 3  # T5's mean_noise_span_length
GENERATION_STEPS = 32  # new tokens the generation-cost chart goes up to


def round_half_up(x: float) -> int:
    return math.floor(x + 0.5)


# ---------------------------------------------------------------- causal LM (measured)


def causal_losses(logits: torch.Tensor, ids: Sequence[int]) -> torch.Tensor:
    """−log p(ids[i+1] | ids[:i+1]) for every i, in nats: [pos - 1].

    logits: [pos, d_vocab] of one forward pass of a decoder over `ids` (row i predicts token i + 1).
    """
    if len(ids) < 2:
        raise ValueError("a causal loss needs at least 2 tokens")
    targets = torch.tensor(list(ids[1:]), device=logits.device)  # [pos - 1]
    log_probs = torch.log_softmax(logits[:-1].float(), dim=-1)  # [pos - 1, d_vocab]
    return -log_probs.gather(-1, targets[:, None])[:, 0]


@torch.inference_mode()
def causal_losses_of(model: Transformer, ids: Sequence[int]) -> torch.Tensor:
    """One forward pass of a decoder over `ids`, and its loss at every position: [pos - 1]."""
    tokens = one_row(ids, model.device)  # [batch, pos]
    logits = model(tokens)[0]  # [pos, d_vocab]
    return causal_losses(logits, ids)


# ---------------------------------------------------------------- masked LM and span corruption (formulas)


def masked_count(n: int, rate: float = MASK_RATE) -> int:
    """Positions BERT's recipe masks in n candidate tokens: max(1, round(rate · n))."""
    if n < 1:
        raise ValueError("no token can be masked")
    return min(n, max(1, round_half_up(rate * n)))


def masked_positions(candidates: Sequence[int], seed: int, rate: float = MASK_RATE) -> list[int]:
    """The positions a seeded draw masks among `candidates` (the text's positions, no start token), sorted."""
    generator = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(candidates), generator=generator).tolist()
    return sorted(candidates[i] for i in order[:masked_count(len(candidates), rate)])


def span_corruption(n: int, rate: float = MASK_RATE, mean_span: float = MEAN_SPAN) -> dict[str, int]:
    """T5's counts for n tokens: corrupted = round(rate · n) in [1, n − 1], spans = max(1, round(corrupted / mean)).

    The input keeps n − corrupted tokens and one sentinel per span; the target holds one sentinel per span
    and the corrupted tokens, and the decoder is trained on every target token (the end token left out).
    """
    if n < 2:
        raise ValueError("span corruption needs at least 2 tokens")
    corrupted = min(n - 1, max(1, round_half_up(rate * n)))
    spans = max(1, round_half_up(corrupted / mean_span))
    return {"tokens": n, "corrupted": corrupted, "spans": spans, "input_sentinels": spans, "target_sentinels": spans,
            "input_length": n - corrupted + spans, "target_length": corrupted + spans}


# ---------------------------------------------------------------- the same compute (formulas)


def non_embedding_parameters(model: Transformer) -> dict[str, int]:
    """N: attention + MLP + norms, from the model's weights (token, position and unembedding matrices left out)."""
    counts = model.parameter_counts()
    n = counts["attention"] + counts["mlp"] + counts["norms"]
    return {"attention": counts["attention"], "mlp": counts["mlp"], "norms": counts["norms"], "non_embedding": n,
            "total": counts["total"]}


def forward_flops_per_token(non_embedding: int) -> int:
    """≈ 2 · N: a multiply and an add per weight (Kaplan et al. 2020; attention scores and unembedding left out)."""
    return 2 * non_embedding


def signals_per_pass(n: int, text_tokens: int, masked: int, non_embedding: int) -> list[dict[str, float | int | str]]:
    """Supervised positions per forward pass, and per GFLOP, for each objective on the same sentence.

    n: the tokens the model reads (a start token included); text_tokens: the sentence's own tokens, the ones
    masking and corruption may choose; masked: the positions masked. The causal and masked passes read n
    tokens; the span-corruption pass reads its input and its target, each through N parameters.
    """
    per_token = forward_flops_per_token(non_embedding)
    t5 = span_corruption(text_tokens)
    rows: list[tuple[str, int, int]] = [
        ("causal", n - 1, n),
        ("masked", masked, n),
        ("span", t5["target_length"], t5["input_length"] + t5["target_length"]),
    ]
    return [{"objective": name, "signals": signals, "tokens_read": read, "flops": per_token * read,
             "signals_per_gflop": signals / (per_token * read / 1e9)} for name, signals, read in rows]


# ---------------------------------------------------------------- generation (formulas)


def generation_positions(n: int, m: int) -> dict[str, int]:
    """Token positions run through the model to generate m tokens after an n-token prompt.

    cached: the prompt once, then each new token except the last (it is never fed back): n + m − 1.
    recomputed: step t (0 … m − 1) reruns all n + t positions: m · n + m (m − 1) / 2.
    """
    if n < 1 or m < 1:
        raise ValueError("a prompt and at least one new token")
    return {"cached": n + m - 1, "recomputed": m * n + m * (m - 1) // 2}


def generation_curve(n: int, steps: int = GENERATION_STEPS) -> dict[str, list[int]]:
    """generation_positions for m = 1 … steps."""
    rows = [generation_positions(n, m) for m in range(1, steps + 1)]
    return {"new_tokens": list(range(1, steps + 1)), "cached": [r["cached"] for r in rows],
            "recomputed": [r["recomputed"] for r in rows]}


# ---------------------------------------------------------------- all of it, for one sentence


def objectives_report(model: Transformer, logits: torch.Tensor, ids: Sequence[int], text_positions: Sequence[int],
                      seed: int) -> dict[str, Any]:
    """Every number the experiment shows for one sentence read by a decoder.

    logits: [pos, d_vocab] of the model's one forward pass over `ids` (the trace's); text_positions: the
    positions of the sentence's own tokens (not an added start token), the ones masking may choose.
    """
    losses = causal_losses(logits, ids)  # [pos - 1]
    masked = masked_positions(text_positions, seed)
    params = non_embedding_parameters(model)
    per_token = forward_flops_per_token(params["non_embedding"])
    n = len(ids)
    return {
        "causal": {"losses": losses.tolist(), "mean": float(losses.mean()), "signals": n - 1},
        "masked": {"seed": seed, "rate": MASK_RATE, "candidates": len(text_positions), "positions": masked,
                   "signals": len(masked)},
        "span": {**span_corruption(len(text_positions)), "rate": MASK_RATE, "mean_span": MEAN_SPAN},
        "compute": {**params, "flops_per_token": per_token, "flops_per_pass": per_token * n,
                    "unembedding_flops_per_token": 2 * model.cfg.d_model * model.cfg.vocab_size},
        "signals": signals_per_pass(n, len(text_positions), len(masked), params["non_embedding"]),
        "generation": generation_curve(n),
    }
