"""POST /api/predict: the next-token distribution, and a few sampled tokens (seeded)."""

from __future__ import annotations

import secrets
from typing import Any

from fastapi import APIRouter

from app.deps import EngineDep, RegistryDep, SettingsDep, encode_inputs, resolve_model, tokens_out
from app.engine import TraceRun, body_key
from app.errors import ApiError
from app.registry import Resolved, special_token, token_text
from app.routers.trace import predictions
from app.schemas import ERRORS, PredictOut, PredictRequest
from app.settings import Settings
from model import readouts
from model.tokenizer import Token

router = APIRouter(prefix="/api", tags=["predict"])


def build_prediction(
    resolved: Resolved, run: TraceRun, body: PredictRequest, seed: int, settings: Settings
) -> dict[str, Any]:
    table = predictions(resolved, run, body.top_k, body.temperature)  # from the cached logits
    enc_dec = resolved.cfg.architecture == "encoder-decoder"
    stop = special_token(resolved.loaded, "eos_token")
    new_ids = readouts.sample_continuation(
        resolved.model, [t.id for t in run.tokens],
        target_tokens=[t.id for t in run.target_tokens] if enc_dec and run.target_tokens else None,
        n_new=body.max_new_tokens, temperature=body.temperature, k=body.top_k, seed=seed,
        max_len=min(settings.max_tokens, resolved.cfg.n_ctx), stop_id=stop.id if stop else None,
    )
    tokenizer = resolved.loaded.tokenizer
    generated = [Token(i, token_text(resolved.loaded, i), 0, 0).to_dict() for i in new_ids]
    out: dict[str, Any] = {
        "model": resolved.name, "tokens": tokens_out(run.tokens), "temperature": body.temperature,
        "top_k": table["top_k"], "rest_prob": table["rest"],
        "generated": {"seed": seed, "tokens": generated, "text": tokenizer.decode(new_ids) if new_ids else ""},
    }
    if run.target_tokens is not None:
        out["target_tokens"] = tokens_out(run.target_tokens)
    return out


@router.post("/predict", response_model=PredictOut, responses=ERRORS)
async def predict(body: PredictRequest, registry: RegistryDep, engine: EngineDep, settings: SettingsDep) -> Any:
    """Next-token probabilities at the last position (softmax(logits / temperature); `top_k` most likely,
    `rest_prob` for the others) and `max_new_tokens` tokens sampled from the top k with `seed`.

    Encoder-decoder models predict the decoder's next token given `text` and `target_text`.
    Encoder-only models have no next token: 422."""
    resolved = await resolve_model(body, registry, engine, settings)
    if resolved.cfg.architecture == "encoder" or not resolved.cfg.lm_head:
        raise ApiError(422, "not_generative",
                       "This model is an encoder: it reads the whole text at once and has no next-token "
                       "prediction. Pick a decoder model (like tiny-gpt) to predict.")
    tokens, target_tokens = encode_inputs(resolved, body, settings)
    seed = body.seed if body.seed is not None else secrets.randbelow(2**31)
    key = body_key("predict", resolved, body) if body.seed is not None else None  # unseeded: fresh samples
    return await engine.answer(key, resolved, tokens, target_tokens,
                               lambda run: build_prediction(resolved, run, body, seed, settings))
