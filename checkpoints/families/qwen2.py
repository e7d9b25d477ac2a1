"""Qwen2 / Qwen2.5: the Llama layout (checkpoints/families/llama.py) with a bias on Q, K and V, and sliding windows
on the layers the config names.

Hugging Face `qwen2` (Qwen2ForCausalLM); GGUF `qwen2`, stored unpermuted, with attn_q / attn_k / attn_v biases.
"""

from __future__ import annotations

from typing import Any

from checkpoints.base import CheckpointError, ConfigFields
from checkpoints.families.llama import LlamaLayout, records


def qwen_windows(hf_config: dict[str, Any], loader: str, n_layers: int) -> tuple[int | None, tuple[int, ...] | None]:
    """transformers' Qwen2 / Qwen3: a window only with `use_sliding_window`, on the layers `layer_types` names
    "sliding_attention" (by default those from `max_window_layers` on)."""
    window = hf_config.get("sliding_window", 4096) if hf_config.get("use_sliding_window", False) else None
    first = hf_config.get("max_window_layers", 28)
    default_types = [
        "sliding_attention" if window is not None and i >= first else "full_attention" for i in range(n_layers)
    ]
    types = hf_config.get("layer_types") or default_types
    if len(types) != n_layers or set(types) - {"full_attention", "sliding_attention"}:
        raise CheckpointError(f"{loader}: config field layer_types = {types!r} is not implemented")
    windowed = tuple(i for i, kind in enumerate(types) if kind == "sliding_attention")
    if windowed and window is None:
        raise CheckpointError(f"{loader}: config field layer_types = {types!r} names sliding layers without a window")
    if not windowed:
        return None, None
    return window, None if len(windowed) == n_layers else windowed


WINDOW_FIELDS = frozenset({"use_sliding_window", "sliding_window", "max_window_layers", "layer_types"})
LAYOUT = LlamaLayout(qkv_bias=True, windows=qwen_windows)
# tokenizer.ggml.pre of the Qwen2 vocabulary (and of DeepSeek-R1's distillations into Qwen2.5)
HF, GGUF = records("qwen2", LAYOUT, ConfigFields(WINDOW_FIELDS, frozenset(), {"use_mrope": False}),
                   {"qwen2": "qwen2", "deepseek-r1-qwen": "qwen2"})
