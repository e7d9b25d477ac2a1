"""POST /api/lab/logit-lens and /ablation: what each block would predict, and which heads a prediction needs.

The numbers come from analysis/lens.py and analysis/ablation.py; this module checks, picks and serializes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from analysis.ablation import MAX_ABLATED_HEADS, ablation_edits, head_ablation, logits_with_edits
from analysis.lens import lm_stack, logit_lens
from analysis.readouts import sequence_loss
from app import errors
from app.answers import Builder
from app.answers.predict import check_generative
from app.inference_pool import TraceRun
from app.resolve import Resolved
from app.schemas_lab2 import AblationLabRequest, LogitLensLabRequest
from app.tokenizing import Inputs, token_text, tokens_out


def plan_logit_lens(resolved: Resolved, request: LogitLensLabRequest) -> Builder:
    check_generative(resolved)

    def build(run: TraceRun) -> dict[str, Any]:
        read = run.target_tokens if resolved.cfg.architecture == "encoder-decoder" else run.tokens
        ids = [t.id for t in read or []]
        lens = logit_lens(resolved.model, run.trace, k=request.k, ids=ids)
        top_ids, top_probs = lens.top_ids.cpu().tolist(), lens.top_probs.cpu().tolist()
        top = [[{"ids": cell_ids, "texts": [token_text(resolved.loaded, i) for i in cell_ids], "probs": cell_probs}
                for cell_ids, cell_probs in zip(layer_ids, layer_probs, strict=True)]
               for layer_ids, layer_probs in zip(top_ids, top_probs, strict=True)]
        following = lens.next_token_probs
        return {
            "model": resolved.name, "tokens": tokens_out(read), "layers": lens.layers, "top": top,
            "next_token_probs": following.cpu().tolist() if following is not None else None,
            "max_diff_last": float((lens.logits[-1] - run.output[0].float()).abs().max()),
        }

    return build


def plan_ablation(resolved: Resolved, request: AblationLabRequest) -> Callable[[Inputs], dict[str, Any]]:
    check_generative(resolved)
    stack, _ = lm_stack(resolved.model)
    heads = len(stack.blocks) * resolved.cfg.n_heads
    if heads > MAX_ABLATED_HEADS:
        raise errors.too_much_work("model", heads, MAX_ABLATED_HEADS, "heads, each ablated in its own forward pass")
    return lambda inputs: build_ablation(resolved, request, inputs)


def build_ablation(resolved: Resolved, request: AblationLabRequest, inputs: Inputs) -> dict[str, Any]:
    model = resolved.model
    enc_dec = resolved.cfg.architecture == "encoder-decoder"
    read = inputs.target_tokens if enc_dec and inputs.target_tokens is not None else inputs.tokens
    if request.position is not None and request.position >= len(read):
        raise errors.out_of_range("Position", request.position, len(read))
    tokens = torch.tensor([[t.id for t in inputs.tokens]], device=model.device)  # [1, pos]
    target = torch.tensor([[t.id for t in read]], device=model.device) if enc_dec else None
    result = head_ablation(model, tokens, position=request.position, target_tokens=target)
    # the same edit naming no head: it must change nothing
    _, prefix = lm_stack(model)
    none, _ = logits_with_edits(model, tokens, target, ablation_edits(prefix, 0, []))
    ids = [t.id for t in read]
    none_loss = sequence_loss(none, ids)
    none_prob = float(torch.softmax(none[result.position], -1)[result.chosen_id])
    return {
        "model": resolved.name, "tokens": tokens_out(read), "position": result.position,
        "chosen_id": result.chosen_id, "chosen_text": token_text(resolved.loaded, result.chosen_id),
        "clean_loss": result.clean_loss, "clean_prob": result.clean_prob,
        "none_ablated": {
            "loss_change": None if none_loss is None or result.clean_loss is None else none_loss - result.clean_loss,
            "prob_change": none_prob - result.clean_prob,
        },
        "heads": [{"layer": e.layer, "head": e.head, "weights": [round(w, 6) for w in e.weights],
                   "max_weight": round(max(e.weights), 6), "loss": e.loss, "loss_change": e.loss_change,
                   "prob": e.prob, "prob_change": e.prob_change} for e in result.heads],
    }
