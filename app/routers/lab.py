"""POST /api/lab/*: the textbook's claims about attention, measured on random vectors and on real models."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from app.schemas import ERRORS
from app.schemas_lab import (
    MasksLabOut,
    MasksLabRequest,
    ParametersLabOut,
    ParametersLabRequest,
    PositionsLabOut,
    PositionsLabRequest,
    SamplingLabOut,
    SamplingLabRequest,
    ScalingLabOut,
    ScalingLabRequest,
)
from app.service import ServiceDep

router = APIRouter(prefix="/api/lab", tags=["lab"])


@router.post("/scaling", response_model=ScalingLabOut, responses=ERRORS)
async def scaling(body: ScalingLabRequest, service: ServiceDep) -> Any:
    """Why ÷√d_k: for unit-variance random q, k the measured Var(q·k) for each d_k (≈ d_k), and the max
    weight and entropy of softmax rows over `n_keys` keys with and without ÷√d_k. With `text` (and a
    model): the same statistics on that model's real scores at `layer`, per head."""
    return await service.lab_scaling(body)


@router.post("/masks", response_model=MasksLabOut, responses=ERRORS)
async def masks(body: MasksLabRequest, service: ServiceDep) -> Any:
    """Causal, bidirectional, sliding-window (`window`), padding (this sentence and its first `shorter`
    tokens in one batch) and encoder-decoder cross masks for the sentence's tokens, and the model's
    pattern at `layer` when every layer uses each mask."""
    return await service.lab_masks(body)


@router.post("/positions", response_model=PositionsLabOut, responses=ERRORS)
async def positions(body: PositionsLabRequest, service: ServiceDep) -> Any:
    """Sinusoidal PE and PE·PEᵀ; RoPE's rotation of one pair and q_m·k_n for random q, k (equal where
    m − n is equal); ALiBi biases per head. Learned positions past the model's n_ctx: 422."""
    return await service.lab_positions(body)


@router.post("/parameters", response_model=ParametersLabOut, responses=ERRORS)
async def parameters(body: ParametersLabRequest, service: ServiceDep) -> Any:
    """Parameters per component (equal to the state dict's sum); one head of width d_model against h heads
    of width d_model/h; MHA, GQA and MQA K/V counts; the FFN's share."""
    return await service.lab_parameters(body)


@router.post("/sampling", response_model=SamplingLabOut, responses=ERRORS)
async def sampling(body: SamplingLabRequest, service: ServiceDep) -> Any:
    """The next-token distribution after temperature, top-k and top-p, and `draws` seeded draws from it
    (the same seed gives the same draws)."""
    return await service.lab_sampling(body)
