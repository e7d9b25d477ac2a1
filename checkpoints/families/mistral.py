"""Mistral: the Llama layout (checkpoints/families/llama.py) with a sliding window on every layer.

Hugging Face `mistral` (MistralForCausalLM: `sliding_window`, 4096 when unset); GGUF `mistral`, Q/K rows permuted
as llama's. Its GGUF files carry a SentencePiece vocabulary (tokenizer.ggml.model = llama): no pre-split.
"""

from __future__ import annotations

from typing import Any

from checkpoints.base import ConfigFields
from checkpoints.families.llama import LlamaLayout, records


def mistral_windows(hf_config: dict[str, Any], loader: str, n_layers: int) -> tuple[int | None, None]:
    """transformers' Mistral: `sliding_window` (default 4096) on every layer."""
    return hf_config.get("sliding_window", 4096), None


LAYOUT = LlamaLayout(windows=mistral_windows, permuted=True)
HF, GGUF = records("mistral", LAYOUT, ConfigFields(frozenset({"sliding_window"}), frozenset(), {}), {})
