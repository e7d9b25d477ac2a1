"""POST /api/predict: the next-token distribution, and a few sampled tokens (seeded)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from app.schemas import ERRORS, PredictOut, PredictRequest
from app.service import ServiceDep

router = APIRouter(prefix="/api", tags=["predict"])


@router.post("/predict", response_model=PredictOut, responses=ERRORS)
async def predict(body: PredictRequest, service: ServiceDep) -> Any:
    """Next-token probabilities at the last position (softmax(logits / temperature); `top_k` most likely,
    `rest_prob` for the others) and `max_new_tokens` tokens sampled from the top k with `seed`.

    Encoder-decoder models predict the decoder's next token given `text` and `target_text`.
    Encoder-only models have no next token: 422."""
    return await service.predict(body)
