"""Gemma 3 (text): the Gemma layout (checkpoints/families/gemma2.py) without soft caps, with an RMSNorm on each head's
q and k, one global layer every 6, and the local layers' own RoPE base.

Hugging Face `gemma3_text` (Gemma3ForCausalLM: rope_parameters per layer type, or the older rope_theta +
rope_local_base_freq); GGUF `gemma3` (rope.freq_base_swa, 10000 when unset, as llama.cpp reads it).
"""

from __future__ import annotations

from checkpoints.base import ConfigFields
from checkpoints.families.gemma2 import GGUF_KEYS, GemmaLayout, records

LAYOUT = GemmaLayout(every=6, blocks_27b=62, soft_caps=False, qk_norm=True, local_rope=True)
HF, GGUF = records("gemma3_text", "gemma3", LAYOUT, ConfigFields(
    # rope_local_base_freq: the local layers' RoPE base (older configs; rope_parameters.sliding_attention now);
    # sliding_window_pattern: what layer_types was made from (one global layer every n)
    frozenset({"rope_local_base_freq", "sliding_window_pattern", "_sliding_window_pattern"}), frozenset(), {}),
    GGUF_KEYS | {"rope.freq_base_swa"})
