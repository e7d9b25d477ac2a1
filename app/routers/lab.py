"""POST /api/lab/*: the textbook's claims about attention, measured on random vectors and on real models."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

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
from app.schemas_lab2 import (
    AblationLabOut,
    AblationLabRequest,
    ComplexityLabOut,
    ComplexityLabRequest,
    FlashLabOut,
    FlashLabRequest,
    GenerateLabOut,
    GenerateLabRequest,
    KVCacheLabOut,
    KVCacheQuery,
    LogitLensLabOut,
    LogitLensLabRequest,
    NormPlacementLabOut,
    NormPlacementLabRequest,
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


# ---------------------------------------------------------------- Lab II: what attention costs, what is used


@router.post("/complexity", response_model=ComplexityLabOut, responses=ERRORS)
async def complexity(body: ComplexityLabRequest, service: ServiceDep) -> Any:
    """Time and peak memory of naive (n × n materialised) and tiled attention on random q, k, v at each
    length, on the server's device, with power-law and n² fits. Lengths that would overrun a time budget
    are skipped (listed with null times); the result is cached."""
    return await service.lab_complexity(body)


@router.post("/flash", response_model=FlashLabOut, responses=ERRORS)
async def flash(body: FlashLabRequest, service: ServiceDep) -> Any:
    """One head of the model, tile by tile with the online softmax: the running max m, sum l and rescaled
    partial output after every tile; the result against the model's own hook_z; the largest tensor held
    against the n × n matrix."""
    return await service.lab_flash(body)


@router.get("/kv-cache", response_model=KVCacheLabOut, responses=ERRORS)
async def kv_cache(query: Annotated[KVCacheQuery, Query()], service: ServiceDep) -> Any:
    """KV-cache bytes per token and in total for published shapes (GPT-3, Llama-2/3, Mistral) and every
    registered model under MHA, GQA and MQA: 2 · layers · kv_heads · d_head · bytes · context · batch."""
    return await service.lab_kv_cache(query)


@router.post("/generate", response_model=GenerateLabOut, responses=ERRORS)
async def generate(body: GenerateLabRequest, service: ServiceDep) -> Any:
    """Greedy decoding with a KV cache: the cache growing step by step (bytes measured and by formula),
    the attention scores computed against recomputing every step, and each step's logits against a full
    recomputation."""
    return await service.lab_generate(body)


@router.post("/norm-placement", response_model=NormPlacementLabOut, responses=ERRORS)
async def norm_placement(body: NormPlacementLabRequest, service: ServiceDep) -> Any:
    """Pre-LN and Post-LN models from one seed: every block's gradient norm at initialisation and the loss
    over the first Adam steps without warm-up (bounded, cached, deterministic for a seed)."""
    return await service.lab_norm_placement(body)


@router.post("/logit-lens", response_model=LogitLensLabOut, responses=ERRORS)
async def logit_lens(body: LogitLensLabRequest, service: ServiceDep) -> Any:
    """The top-k next tokens after every block at every position, through the final norm and the
    unembedding; the last layer's reading equals the model's logits."""
    return await service.lab_logit_lens(body)


@router.post("/ablation", response_model=AblationLabOut, responses=ERRORS)
async def ablation(body: AblationLabRequest, service: ServiceDep) -> Any:
    """Every head's attention at `position` beside the change in the loss and in the chosen next token's
    probability when that head alone is ablated (Lab I's intervention)."""
    return await service.lab_ablation(body)
