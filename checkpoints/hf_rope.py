"""A Hugging Face config's RoPE: its base, and its scaling as one frequency factor per pair (model/positional.py)."""

from __future__ import annotations

import math
from typing import Any

from checkpoints.base import CheckpointError
from model.positional import llama3_freq_factors

# RoPE scaling types this loader implements, and the keys each reads (besides rope_type/type and rope_theta)
ROPE_TYPES: dict[str, frozenset[str]] = {
    "default": frozenset(),
    "linear": frozenset({"factor"}),
    "llama3": frozenset({"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}),
}


def rope_settings(hf_config: dict[str, Any], loader: str, d_head: int) -> tuple[float, tuple[float, ...] | None]:
    """(rope_theta, one frequency factor per pair or None), from rope_parameters (transformers 5) or the older
    rope_theta + rope_scaling. Scaling types: linear (every pair `factor` times slower) and llama3 (Llama 3.1:
    only the slow pairs); every other type (yarn, longrope, dynamic ...) and every unknown key is refused."""
    def number(value: Any, name: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise CheckpointError(f"{loader}: config field {name} = {value!r} is not a number")
        return float(value)

    theta = number(hf_config.get("rope_theta", 10000.0), "rope_theta")
    factors: tuple[float, ...] | None = None
    for field in ("rope_parameters", "rope_scaling"):
        written = hf_config.get(field) or {}
        if not isinstance(written, dict):
            raise CheckpointError(f"{loader}: config field {field} = {written!r} is not implemented")
        scaling = dict(written)
        if "rope_theta" in scaling:
            theta = number(scaling.pop("rope_theta"), f"{field}.rope_theta")
        if scaling.get("partial_rotary_factor", 1.0) == 1.0:
            scaling.pop("partial_rotary_factor", None)
        type_key = "rope_type" if "rope_type" in scaling else "type"
        rope_type = scaling.pop(type_key, "default")
        if scaling.get("type", rope_type) == rope_type:  # older files write both spellings, agreeing
            scaling.pop("type", None)
        if not isinstance(rope_type, str) or rope_type not in ROPE_TYPES:
            raise CheckpointError(f"{loader}: config field {field}.{type_key} = {rope_type!r} is not implemented "
                                  f"(implemented: {', '.join(ROPE_TYPES)})")
        for key, value in scaling.items():
            if key not in ROPE_TYPES[rope_type]:
                raise CheckpointError(f"{loader}: config field {field}.{key} = {value!r} is not implemented "
                                      f"for rope_type {rope_type!r}")
        missing = sorted(ROPE_TYPES[rope_type] - set(scaling))
        if missing:
            raise CheckpointError(f"{loader}: config field {field} of rope_type {rope_type!r} lacks "
                                  f"{', '.join(missing)}")
        values = {key: number(value, f"{field}.{key}") for key, value in scaling.items()}
        if rope_type == "linear":
            if values["factor"] <= 0:
                raise CheckpointError(f"{loader}: config field {field}.factor = {values['factor']} must be above 0")
            factors = (values["factor"],) * (d_head // 2)
        elif rope_type == "llama3":
            try:
                factors = llama3_freq_factors(
                    d_head, theta, values["factor"], values["low_freq_factor"], values["high_freq_factor"],
                    int(values["original_max_position_embeddings"]))
            except ValueError as error:
                raise CheckpointError(f"{loader}: config field {field}: {error}") from error
    return theta, factors
