"""POST /api/lab/scaling, /masks and /sampling: experiments that read a model's run on a text.

Each `plan_*` checks the request against the model first (a bad layer or window costs no
forward pass) and returns a builder for the engine's pool. The numbers come from model/lab.py;
this module picks, rounds and serializes.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import torch

from app import errors
from app.answers import Budget, Builder
from app.answers.predict import check_generative
from app.answers.request_checks import check_layer, stack_prefix
from app.cache import LRU
from app.inference_pool import TraceRun
from app.resolve import Resolved
from app.schemas_lab import MasksLabRequest, SamplingLabRequest, ScalingLabRequest
from app.tensors import encode_tensor
from app.tokenizing import token_text, tokens_out
from lab import masks as mask_lab
from lab import sampling, scaling

MAX_SCALING_WORK = 1 << 25  # random numbers drawn for one variance curve: samples × Σ d_k × 2
MAX_SOFTMAX_WORK = 1 << 24  # products for the softmax rows: rows × n_keys × Σ d_k
MAX_DRAWS_SHOWN = 200  # draws listed one by one; all of them are counted

_synthetic: LRU[dict[str, Any]] = LRU(64)  # random-vector curves by their parameters (cheap to keep)


def rounded(values: list[float], digits: int = 6) -> list[float]:
    return [round(v, digits) for v in values]


# ---------------------------------------------------------------- scaling


def check_scaling(request: ScalingLabRequest) -> None:
    for d_k in request.d_k:
        if not 1 <= d_k <= 1024:
            raise errors.invalid_option("d_k", f"{errors.shown(d_k)} is outside 1 to 1024.")
    work = request.samples * sum(request.d_k) * 2
    if work > MAX_SCALING_WORK:
        raise errors.too_much_work("samples", work, MAX_SCALING_WORK, "random numbers (samples × Σ d_k × 2)")
    softmax_work = request.rows * request.n_keys * sum(request.d_k)
    if softmax_work > MAX_SOFTMAX_WORK:
        raise errors.too_much_work("rows", softmax_work, MAX_SOFTMAX_WORK, "multiplications (rows × n_keys × Σ d_k)")


def synthetic_scaling(request: ScalingLabRequest) -> dict[str, Any]:
    """The random-vector curves (cached by their parameters: a model's request reuses them)."""
    key = (tuple(request.d_k), request.samples, request.n_keys, request.rows, request.seed)
    if (cached := _synthetic.get(key)) is not None:
        return cached
    variance = scaling.qk_variance(request.d_k, request.samples, request.seed)
    sharp = scaling.softmax_sharpness(request.d_k, request.n_keys, request.rows, request.seed)
    out = {"d_k": list(request.d_k), "samples": request.samples, "n_keys": request.n_keys,
           **{k: rounded(v) for k, v in {**variance, **sharp}.items()},
           "entropy_uniform": round(float(torch.tensor(float(request.n_keys)).log()), 6)}
    return _synthetic.put(key, out)


def build_synthetic_scaling(request: ScalingLabRequest) -> dict[str, Any]:
    return {**synthetic_scaling(request), "model": None, "tokens": None, "heads": None}


def plan_scaling(resolved: Resolved, request: ScalingLabRequest) -> Builder:
    check_scaling(request)
    prefix, stack, n_layers = stack_prefix(resolved, None, False)
    check_layer(request.layer, n_layers)
    attn = f"{prefix}blocks.{request.layer}.attn."

    def build(run: TraceRun) -> dict[str, Any]:
        raw = run.trace[attn + "hook_scores_raw"][0]  # [head, q_pos, k_pos]
        scores = run.trace[attn + "hook_attn_scores"][0]
        stats = scaling.head_statistics(raw, scores, resolved.cfg.d_head)
        heads = {"layer": request.layer, "d_head": resolved.cfg.d_head, "stack": stack,
                 **{k: rounded(v) for k, v in stats.items()}}
        return {**synthetic_scaling(request), "model": resolved.name, "tokens": tokens_out(run.tokens),
                "heads": heads}

    return build


# ---------------------------------------------------------------- masks


def plan_masks(resolved: Resolved, request: MasksLabRequest, budget: Budget) -> Builder:
    cfg = resolved.cfg
    enc_dec = cfg.architecture == "encoder-decoder"
    prefix, stack, n_layers = stack_prefix(resolved, None, False)
    check_layer(request.layer, n_layers)
    causal = cfg.architecture == "decoder"  # the stack that reads the sentence

    def build(run: TraceRun) -> dict[str, Any]:
        model = resolved.model
        n = len(run.tokens)
        shorter = request.shorter if request.shorter is not None else max(1, n // 2)
        if shorter > n:
            raise errors.invalid_option("shorter", f"{shorter} is more than the sentence's {n} tokens.")
        n_target = len(run.target_tokens) if run.target_tokens is not None else n
        cells = cfg.n_heads * (3 * n * n + 2 * n * n + 2 * n_target * n)  # the patterns, before any is run
        if cells > budget.max_cells:
            raise errors.response_too_large(cells, budget.max_cells)
        masks = mask_lab.mask_set(n, shorter, n_target, request.window, causal)
        ids = torch.tensor([[t.id for t in run.tokens]], device=model.device)  # [1, pos]
        target = (torch.tensor([[t.id for t in run.target_tokens]], device=model.device)
                  if run.target_tokens is not None else None)
        kwargs = {"target_tokens": target} if enc_dec else {}
        dims = ("head", "q_pos", "k_pos")
        out: dict[str, Any] = {}
        for name in ("causal", "bidirectional", "sliding"):
            allowed = masks[name].to(model.device)
            pattern = mask_lab.patterns_under_mask(model, ids, allowed, prefix, request.layer, **kwargs)[0]
            out[name] = {"mask": masks[name].int().tolist(),
                         "pattern": encode_tensor(name, pattern, dims, request.encoding)}
        pattern_name = f"{prefix}blocks.{request.layer}.attn.hook_pattern"
        cross_name = f"decoder.blocks.{min(request.layer, cfg.decoder_layers - 1)}.cross_attn.hook_pattern"
        padded = mask_lab.padded_run(model, ids, shorter, [pattern_name] + ([cross_name] if enc_dec else []), target)
        rows = ("row", "head", "q_pos", "k_pos")
        out["padding"] = {"mask": masks["padding"].int().tolist(),
                          "pattern": encode_tensor("padding", padded[pattern_name], rows, request.encoding)}
        out["cross"] = {"mask": masks["cross"].int().tolist(),
                        "pattern": encode_tensor("cross", padded[cross_name], rows, request.encoding)
                        if enc_dec else None}
        window = cfg.sliding_window
        answer: dict[str, Any] = {
            "model": resolved.name, "tokens": tokens_out(run.tokens), "layer": request.layer, "stack": stack,
            "window": request.window, "shorter": shorter,
            "model_mask": "sliding" if window is not None else "causal" if causal else "bidirectional",
            "masks": out,
        }
        if run.target_tokens is not None:
            answer["target_tokens"] = tokens_out(run.target_tokens)
        return answer

    return build


# ---------------------------------------------------------------- sampling


def plan_sampling(resolved: Resolved, request: SamplingLabRequest) -> Builder:
    check_generative(resolved)

    def build(run: TraceRun) -> dict[str, Any]:
        logits = run.output[0, -1].float().cpu()  # [d_vocab] at the last position
        steps = sampling.sampling_distributions(logits, request.temperature, request.top_k, request.top_p)
        order = torch.argsort(steps["original"], descending=True)[: request.show].tolist()
        rows = [{"id": i, "text": token_text(resolved.loaded, i), "logit": round(float(logits[i]), 4),
                 **{name: round(float(p[i]), 6) for name, p in steps.items()}} for i in order]
        draws = sampling.seeded_draws(steps["final"], request.draws, request.seed)
        counts = Counter(draws)
        return {
            "model": resolved.name, "tokens": tokens_out(run.target_tokens or run.tokens),
            "temperature": request.temperature, "top_k": request.top_k, "top_p": request.top_p, "seed": request.seed,
            "rows": rows,
            "kept": {name: int((p > 0).sum()) for name, p in steps.items()},
            "entropy": {name: round(sampling.entropy(p), 6) for name, p in steps.items()},
            "draws": draws[:MAX_DRAWS_SHOWN],
            "draw_text": [token_text(resolved.loaded, i) for i in draws[:MAX_DRAWS_SHOWN]],
            "counts": {str(i): c for i, c in counts.most_common(MAX_DRAWS_SHOWN)},
        }

    return build
