"""POST /api/tokenize and POST /api/trace: tokens with spans, and any slice of the recorded forward pass."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from app.schemas import ERRORS, TokenizeOut, TokenizeRequest, TraceOut, TraceRequest
from app.service import ServiceDep

router = APIRouter(prefix="/api", tags=["trace"])


@router.post("/tokenize", response_model=TokenizeOut, responses=ERRORS)
async def tokenize(body: TokenizeRequest, service: ServiceDep) -> Any:
    """Tokens as the model sees them: id, text piece and character span [start, end) of the input."""
    return await service.tokenize(body)


@router.post("/trace", response_model=TraceOut, responses=ERRORS)
async def trace(body: TraceRequest, service: ServiceDep) -> Any:
    """Any stages of the forward pass, by trace name or pattern, optionally for some layers and heads.

    The full trace is computed once per (model, text, target_text) and cached: asking for
    another stage of the same text only slices and serializes.
    """
    return await service.trace(body)
