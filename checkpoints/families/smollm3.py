"""SmolLM3: the Llama layout (checkpoints/families/llama.py) with no positions in some layers (NoPE).

    a layer with RoPE:   scores = RoPE(W_Q · x)ᵢ · RoPE(W_K · x)ⱼ / √d_head
    a NoPE layer:        scores = (W_Q · x)ᵢ · (W_K · x)ⱼ / √d_head      (only the causal mask orders the tokens)

Hugging Face `smollm3` (SmolLM3ForCausalLM): `no_rope_layers`, one flag per layer (1: RoPE, 0: NoPE), by default
every `no_rope_layer_interval`-th layer (the 4th, 8th, ...) without RoPE; an optional sliding window on the layers
`layer_types` names (by default the NoPE layers, with `use_sliding_window`); Llama's attention_bias and mlp_bias.
GGUF `smollm3`: llama.cpp has no key for the NoPE layers and leaves RoPE out of every fourth (its
n_no_rope_layer_step, fixed at 4); Q/K rows permuted as llama's.
"""

from __future__ import annotations

from typing import Any

from checkpoints.base import CheckpointError, ConfigFields
from checkpoints.families.llama import LlamaLayout, records
from checkpoints.gguf_read import GgufRead

GGUF_NOPE_STEP = 4  # llama.cpp's n_no_rope_layer_step for smollm3 (no GGUF key holds it)


def nope_layers(hf_config: dict[str, Any], loader: str, n_layers: int) -> tuple[int, ...]:
    """The layers without RoPE: where no_rope_layers holds 0, or every no_rope_layer_interval-th layer."""
    interval = hf_config.get("no_rope_layer_interval", 4)
    if isinstance(interval, bool) or not isinstance(interval, int) or interval < 1:
        raise CheckpointError(f"{loader}: config field no_rope_layer_interval = {interval!r} must be a whole "
                              "number >= 1")
    flags = hf_config.get("no_rope_layers")
    if flags is None:
        flags = [int((layer + 1) % interval != 0) for layer in range(n_layers)]
    if not isinstance(flags, list) or len(flags) != n_layers or any(f not in (0, 1) for f in flags):
        raise CheckpointError(f"{loader}: config field no_rope_layers = {flags!r} is not implemented (one 0 or 1 "
                              f"per layer: {n_layers})")
    return tuple(layer for layer, rope in enumerate(flags) if not rope)


def smollm3_windows(hf_config: dict[str, Any], loader: str, n_layers: int) -> tuple[int | None, tuple[int, ...] | None]:
    """transformers' SmolLM3: a window only with use_sliding_window, on the layers layer_types names
    "sliding_attention" (by default the NoPE layers)."""
    window = hf_config.get("sliding_window") if hf_config.get("use_sliding_window", False) else None
    nope = nope_layers(hf_config, loader, n_layers)
    default = ["sliding_attention" if window is not None and layer in nope else "full_attention"
               for layer in range(n_layers)]
    types = hf_config.get("layer_types") or default
    if not isinstance(types, list) or len(types) != n_layers or set(types) - {"full_attention", "sliding_attention"}:
        raise CheckpointError(f"{loader}: config field layer_types = {types!r} is not implemented")
    windowed = tuple(layer for layer, kind in enumerate(types) if kind == "sliding_attention")
    if windowed and window is None:
        raise CheckpointError(f"{loader}: config field layer_types = {types!r} names sliding layers without a "
                              "window (use_sliding_window and sliding_window)")
    if not windowed:
        return None, None
    return window, None if len(windowed) == n_layers else windowed


def hf_nope(hf_config: dict[str, Any], loader: str, n_layers: int) -> dict[str, Any]:
    return {"nope_layers": nope_layers(hf_config, loader, n_layers) or None}


def gguf_nope(read: GgufRead) -> dict[str, Any]:
    n_layers = int(read.get("block_count"))
    return {"nope_layers": tuple(layer for layer in range(n_layers) if (layer + 1) % GGUF_NOPE_STEP == 0) or None}


LAYOUT = LlamaLayout(attention_bias=True, mlp_bias=True, windows=smollm3_windows, permuted=True, hf_extra=hf_nope,
                     gguf_extra=gguf_nope)
HF, GGUF = records("smollm3", LAYOUT, ConfigFields(
    frozenset({"attention_bias", "mlp_bias", "no_rope_layers", "no_rope_layer_interval", "use_sliding_window",
               "sliding_window", "layer_types"}), frozenset(), {}),
    {"llama-bpe": "llama3"})  # Llama 3's vocabulary
