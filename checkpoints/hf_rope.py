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
# longrope (Phi-3, Phi-4-mini; a family record asks for it: checkpoints/families/phi3.py): two factor sets, the
# attention factor. Its old name "su" (transformers 5.24 fails to build such a config) and "yarn" (which Phi3Config
# renames to longrope, while llama.cpp gives it another attention factor) stay refused by name.
LONGROPE_KEYS = frozenset({"short_factor", "long_factor", "original_max_position_embeddings", "factor",
                           "attention_factor"})


def rope_settings(hf_config: dict[str, Any], loader: str, d_head: int) -> tuple[float, tuple[float, ...] | None]:
    """(rope_theta, one frequency factor per pair or None), from rope_parameters (transformers 5) or the older
    rope_theta + rope_scaling. Scaling types: linear (every pair `factor` times slower) and llama3 (Llama 3.1:
    only the slow pairs); every other type (yarn, longrope, dynamic ...) and every unknown key is refused."""
    fields = rope_fields(hf_config, loader, d_head)
    return fields["rope_base"], fields["rope_freq_factors"]


def rope_fields(hf_config: dict[str, Any], loader: str, d_head: int, phi: bool = False) -> dict[str, Any]:
    """The TransformerConfig fields of the config's RoPE: rope_base and rope_freq_factors for every model type;
    with `phi` (Phi-3's family) also partial rotary (partial_rotary_factor -> rope_dims) and longrope (short_factor ->
    rope_freq_factors, long_factor -> rope_long_freq_factors past original_max_position_embeddings, and the
    attention factor transformers multiplies cos and sin by)."""
    out: dict[str, Any] = {}
    partial = hf_config.get("partial_rotary_factor", 1.0) if phi else 1.0
    for field in ("rope_parameters", "rope_scaling"):
        written = hf_config.get(field) or {}
        if phi and isinstance(written, dict) and "partial_rotary_factor" in written:
            partial = written["partial_rotary_factor"]
    if partial != 1.0:
        if isinstance(partial, bool) or not isinstance(partial, (int, float)) or not 0 < partial <= 1:
            raise CheckpointError(f"{loader}: config field partial_rotary_factor = {partial!r} must be in (0, 1]")
        out["rope_dims"] = int(d_head * partial)  # transformers: int(head_dim * partial_rotary_factor)
        if out["rope_dims"] < 2 or out["rope_dims"] % 2:
            raise CheckpointError(f"{loader}: config field partial_rotary_factor = {partial} turns "
                                  f"{out['rope_dims']} of {d_head} dimensions: not an even number of pairs")
    theta, factors = _rope_scaling(hf_config, loader, out.get("rope_dims", d_head), out, phi)
    out["rope_base"], out["rope_freq_factors"] = theta, factors
    return out


def _rope_scaling(hf_config: dict[str, Any], loader: str, d_head: int,
                  out: dict[str, Any], phi: bool) -> tuple[float, tuple[float, ...] | None]:
    """rope_settings' reading of the scaling, for `d_head` turned dimensions; longrope's other fields go to out."""

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
        if scaling.get("partial_rotary_factor", 1.0) == 1.0 or phi:  # phi3: read by rope_fields
            scaling.pop("partial_rotary_factor", None)
        type_key = "rope_type" if "rope_type" in scaling else "type"
        rope_type = scaling.pop(type_key, "default")
        if scaling.get("type", rope_type) == rope_type:  # older files write both spellings, agreeing
            scaling.pop("type", None)
        if phi and rope_type == "longrope":
            factors = _longrope(hf_config, loader, d_head, field, scaling, theta, out)
            continue
        if not isinstance(rope_type, str) or rope_type not in ROPE_TYPES:
            implemented = ", ".join([*ROPE_TYPES, *(("longrope",) if phi else ())])
            raise CheckpointError(f"{loader}: config field {field}.{type_key} = {rope_type!r} is not implemented "
                                  f"(implemented: {implemented})")
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


def _longrope(hf_config: dict[str, Any], loader: str, rotary_dims: int, field: str, scaling: dict[str, Any],
              theta: float, out: dict[str, Any]) -> tuple[float, ...]:
    """Phi-3's longrope, as transformers computes it (modeling_rope_utils._compute_longrope_parameters): ω_i is
    divided by short_factor[i] while the sequence is at most original_max_position_embeddings long, by
    long_factor[i] past it; cos and sin are multiplied by attention_factor, by default
    √(1 + ln s / ln original) with s = factor, or max_position_embeddings / original when factor is unset."""
    for key, value in scaling.items():
        if key not in LONGROPE_KEYS:
            raise CheckpointError(f"{loader}: config field {field}.{key} = {value!r} is not implemented "
                                  "for rope_type 'longrope'")
    # Phi3Config: the top-level original_max_position_embeddings (default 4096) wins over the one in the dict
    original = hf_config.get("original_max_position_embeddings", scaling.get("original_max_position_embeddings", 4096))
    sets: dict[str, tuple[float, ...]] = {}
    for key in ("short_factor", "long_factor"):
        values = scaling.get(key)
        if not isinstance(values, list) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0
                for v in values):
            raise CheckpointError(f"{loader}: config field {field}.{key} must be a list of numbers above 0, "
                                  f"got {values!r}")
        if len(values) != rotary_dims // 2:
            raise CheckpointError(f"{loader}: config field {field}.{key} has {len(values)} factors, but "
                                  f"{rotary_dims} turned dimensions make {rotary_dims // 2} pairs")
        sets[key] = tuple(float(v) for v in values)
    if isinstance(original, bool) or not isinstance(original, int) or original < 1:
        raise CheckpointError(f"{loader}: config field original_max_position_embeddings = {original!r} "
                              "must be a whole number >= 1")
    factor = scaling.get("factor")
    if factor is None:
        factor = hf_config.get("max_position_embeddings", 4096) / original
    attention = scaling.get("attention_factor")
    for name, value in (("factor", factor), ("attention_factor", attention)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not math.isfinite(value) or value < 0):
            raise CheckpointError(f"{loader}: config field {field}.{name} = {value!r} must be a number >= 0")
    if attention is None:
        attention = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original))
    out.update(rope_long_freq_factors=sets["long_factor"], rope_original_context=original,
               rope_attention_factor=float(attention))
    return sets["short_factor"]
