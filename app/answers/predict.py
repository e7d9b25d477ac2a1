"""POST /api/predict's builder: the next-token distribution, the distribution sampled from, and a few sampled
tokens (seeded). Its request and answer are app/schemas/predict.py."""

from __future__ import annotations

import secrets
from typing import Any

from analysis import readouts
from app.answers.trace import next_tokens, text_loss
from app.inference_pool import ForwardPass
from app.pipeline import Build, Context, Endpoint
from app.request_checks import check_generative
from app.resolve import Resolved
from app.schemas import PredictOut, PredictRequest
from app.tokenizing import special_token, token_text, tokens_out
from model.edits import Interventions
from model.generate import generate
from model.tokenizer import Token


def plan(context: Context, request: PredictRequest) -> Build:
    resolved = context.model
    check_generative(resolved)
    # an unseeded request wants fresh samples: a seed of its own (and its answer is never cached, see PREDICT)
    seed = request.seed if request.seed is not None else secrets.randbelow(2**31)
    max_len = min(context.max_tokens, resolved.cfg.n_ctx)
    # no work budget: the answer is a few hundred numbers at most
    return lambda run: build_prediction(resolved, run.trace(), request, seed, max_len, run.edits)


def build_prediction(resolved: Resolved, forward: ForwardPass, request: PredictRequest, seed: int,
                     max_len: int, edits: Interventions | None = None) -> dict[str, Any]:
    table = next_tokens(resolved, forward, request.top_k, request.temperature)  # from the cached logits
    enc_dec = resolved.cfg.architecture == "encoder-decoder"
    stop = special_token(resolved.loaded, "eos_token")
    new_ids = generate(
        resolved.model, [t.id for t in forward.tokens],
        target_ids=[t.id for t in forward.target_tokens] if enc_dec and forward.target_tokens else None,
        max_new_tokens=request.max_new_tokens, temperature=request.temperature, top_k=request.sample_top_k,
        top_p=request.top_p, seed=seed,
        max_len=max_len, stop_id=stop.id if stop else None,
        edits=edits,  # the request's interventions, as in the traced pass
    )
    generated = [Token(i, token_text(resolved.loaded, i), 0, 0).to_dict() for i in new_ids]
    text = resolved.loaded.tokenizer.decode(new_ids) if new_ids else ""
    out: dict[str, Any] = {
        "model": resolved.name, "tokens": tokens_out(forward.tokens), "temperature": request.temperature,
        "top_k": table["top_k"], "rest_prob": table["rest"],
        "sampling": {
            "temperature": request.temperature, "top_k": request.sample_top_k, "top_p": request.top_p,
            **readouts.sampling_readout(forward.output[0, -1], request.temperature, request.sample_top_k,
                                        request.top_p, request.sample_rows),
        },
        "generated": {"seed": seed, "tokens": generated, "text": text},
        "loss": text_loss(forward),
    }
    if forward.target_tokens is not None:
        out["target_tokens"] = tokens_out(forward.target_tokens)
    return out


PREDICT = Endpoint(
    name="predict", method="POST", route="/api/predict", tag="predict", request=PredictRequest, response=PredictOut,
    plan=plan, cached=lambda request: request.seed is not None,  # unseeded: fresh samples each time
    summary="Next-token probabilities at the last position (softmax(logits / temperature); `top_k` most likely,\n"
            "`rest_prob` for the others) and `max_new_tokens` tokens sampled from the top k with `seed`.\n\n"
            "Encoder-decoder models predict the decoder's next token given `text` and `target_text`.\n"
            "Encoder-only models have no next token: 422.")
