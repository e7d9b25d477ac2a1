"""POST /api/predict's builder: the next-token distribution, the distribution sampled from, and a few sampled
tokens (seeded). Its request and answer are app/schemas/predict.py."""

from __future__ import annotations

from typing import Any

from analysis import readouts
from app.answers import Builder
from app.answers.trace import next_tokens, text_loss
from app.inference_pool import TraceRun
from app.request_checks import check_generative, interventions_for
from app.resolve import Resolved
from app.schemas import PredictRequest
from app.tokenizing import special_token, token_text, tokens_out
from model.generate import generate
from model.tokenizer import Token


def plan(resolved: Resolved, request: PredictRequest, seed: int, max_len: int) -> Builder:
    check_generative(resolved)
    return lambda run: build_prediction(resolved, run, request, seed, max_len)


def build_prediction(resolved: Resolved, run: TraceRun, request: PredictRequest, seed: int,
                     max_len: int) -> dict[str, Any]:
    table = next_tokens(resolved, run, request.top_k, request.temperature)  # from the cached logits
    enc_dec = resolved.cfg.architecture == "encoder-decoder"
    stop = special_token(resolved.loaded, "eos_token")
    new_ids = generate(
        resolved.model, [t.id for t in run.tokens],
        target_ids=[t.id for t in run.target_tokens] if enc_dec and run.target_tokens else None,
        max_new_tokens=request.max_new_tokens, temperature=request.temperature, top_k=request.sample_top_k,
        top_p=request.top_p, seed=seed,
        max_len=max_len, stop_id=stop.id if stop else None,
        edits=interventions_for(resolved, request.interventions),
    )
    generated = [Token(i, token_text(resolved.loaded, i), 0, 0).to_dict() for i in new_ids]
    text = resolved.loaded.tokenizer.decode(new_ids) if new_ids else ""
    out: dict[str, Any] = {
        "model": resolved.name, "tokens": tokens_out(run.tokens), "temperature": request.temperature,
        "top_k": table["top_k"], "rest_prob": table["rest"],
        "sampling": {
            "temperature": request.temperature, "top_k": request.sample_top_k, "top_p": request.top_p,
            **readouts.sampling_readout(run.output[0, -1], request.temperature, request.sample_top_k,
                                        request.top_p, request.sample_rows),
        },
        "generated": {"seed": seed, "tokens": generated, "text": text},
        "loss": text_loss(run),
    }
    if run.target_tokens is not None:
        out["target_tokens"] = tokens_out(run.target_tokens)
    return out
