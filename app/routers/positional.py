"""GET /api/positional-encoding: the position information each scheme adds, from model/positional.py."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query

from app.deps import EngineDep, RegistryDep, resolve_named
from app.errors import ApiError
from app.schemas import ERRORS, DType, Encoding, PositionalOut
from app.tensors import encode_tensor
from model import readouts

router = APIRouter(prefix="/api", tags=["positional"])

Kind = Literal["sinusoidal", "learned", "rope", "alibi"]
DIMS = {
    "table": ("pos", "d_model"), "angles": ("pos", "pair"), "cos": ("pos", "pair"), "sin": ("pos", "pair"),
    "rotated": ("pos", "d_head"), "slopes": ("head",), "bias": ("head", "q_pos", "k_pos"),
}


def invalid(message: str) -> ApiError:
    return ApiError(422, "invalid_request", message)


def compute(
    kind: str, length: int, d_model: int, n_heads: int, base: float, causal: bool, model: Any
) -> dict[str, Any]:
    if kind == "sinusoidal":
        if d_model % 2:
            raise invalid("The sinusoidal table needs an even d_model.")
        return readouts.sinusoidal(length, d_model)
    if kind == "learned":
        if model is None or model.cfg.pos_encoding != "learned":
            raise invalid("A learned table belongs to a trained model: pass `model` naming one with learned positions.")
        return readouts.learned_positions(model, length)
    if d_model % n_heads:
        raise invalid(f"d_model ({d_model}) must be divisible by n_heads ({n_heads}).")
    if kind == "rope":
        if (d_model // n_heads) % 2:
            raise invalid("RoPE rotates pairs of dimensions: d_model / n_heads must be even.")
        return readouts.rope(length, d_model // n_heads, base)
    return readouts.alibi(n_heads, length, causal)


@router.get("/positional-encoding", response_model=PositionalOut, responses=ERRORS)
async def positional_encoding(
    registry: RegistryDep,
    engine: EngineDep,
    kind: Annotated[Kind | None, Query(description="Default: the model's own kind, else sinusoidal.")] = None,
    length: Annotated[int, Query(ge=1, le=512, description="Number of positions.")] = 32,
    d_model: Annotated[int | None, Query(ge=2, le=1024)] = None,
    n_heads: Annotated[int | None, Query(ge=1, le=16)] = None,
    base: Annotated[float | None, Query(gt=1, le=1e7, description="RoPE base (theta).")] = None,
    causal: Annotated[bool, Query(description="ALiBi: distances q - k (causal) or |q - k|.")] = True,
    model: Annotated[str | None, Query(max_length=64, description="Take sizes (and a learned table) from it.")] = None,
    encoding: Encoding = "list",
    dtype: DType = "float32",
) -> Any:
    """Sinusoidal table [pos, d_model], a model's learned table, RoPE angles / cos / sin per pair and a
    rotated all-ones vector [pos, d_head], or ALiBi slopes and bias per head [head, q_pos, k_pos]."""
    resolved = await resolve_named(model, registry, engine) if model is not None else None
    cfg = resolved.cfg if resolved is not None else None
    if kind is None:
        kind = cfg.pos_encoding if cfg is not None and cfg.pos_encoding != "none" else "sinusoidal"  # type: ignore[assignment]
    d_model = d_model or (cfg.d_model if cfg else 64)
    n_heads = n_heads or (cfg.n_heads if cfg else 4)
    base = base or (cfg.rope_base if cfg else 10000.0)
    tensors = compute(str(kind), length, d_model, n_heads, base, causal, resolved.model if resolved else None)

    def serialize() -> dict[str, Any]:
        encoded = {k: encode_tensor(k, v, DIMS[k], encoding, dtype) for k, v in tensors.items()}
        return {"kind": kind, "model": resolved.name if resolved else None, "length": length, "d_model": d_model,
                "n_heads": n_heads, "d_head": d_model // n_heads, "base": base if kind == "rope" else None,
                "tensors": encoded}

    return await engine.respond(None, serialize)
