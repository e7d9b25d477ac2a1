"""Qwen3: the Llama layout (checkpoints/families/llama.py) with an RMSNorm on each head's q and k before RoPE,
Llama's attention_bias (Q, K, V and O) and Qwen2's sliding windows.

Hugging Face `qwen3` (Qwen3ForCausalLM); GGUF `qwen3`, stored unpermuted, with attn_q_norm / attn_k_norm.
"""

from __future__ import annotations

from checkpoints.base import ConfigFields
from checkpoints.families.llama import LlamaLayout, records
from checkpoints.families.qwen2 import WINDOW_FIELDS, qwen_windows

LAYOUT = LlamaLayout(attention_bias=True, qk_norm=True, windows=qwen_windows)
HF, GGUF = records("qwen3", LAYOUT, ConfigFields(WINDOW_FIELDS | {"attention_bias"}, frozenset(), {}),
                   {"qwen2": "qwen2"})  # Qwen3 keeps Qwen2's vocabulary
