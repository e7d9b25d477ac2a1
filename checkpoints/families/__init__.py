"""The model families the loaders implement: one module each (checkpoints/families/<family>.py), holding its
Hugging Face record (`HF`, an HfFamily) and/or its GGUF record (`GGUF`, a GgufFamily): the keys it reads, the
config it builds, the converter, the expected shapes and the tokenizer's pre-split (checkpoints/families/records.py).

checkpoints/hf.py and checkpoints/gguf.py look a family up here by the file's own name (config.json's model_type,
GGUF general.architecture) and never branch on it. Adding a family: docs/ARCHITECTURE.md, "Add a model family".
"""

from __future__ import annotations

from types import ModuleType

from checkpoints.families import (
    bert,
    gemma2,
    gemma3,
    gemma4,
    gpt2,
    llama,
    mistral,
    phi3,
    qwen2,
    qwen3,
    qwen3_moe,
    qwen35,
    qwen35_moe,
    qwen35_moe_vl,
    qwen35_vl,
    smollm3,
    starcoder2,
)
from checkpoints.families.records import GgufFamily, HfFamily

# in the order the loaders list them in their refusals
FAMILIES: dict[str, ModuleType] = {module.__name__.rsplit(".", 1)[1]: module for module in (
    llama, mistral, qwen2, qwen3, qwen35, qwen35_vl, gpt2, gemma2, gemma3, gemma4, phi3, bert, starcoder2, smollm3,
    qwen3_moe, qwen35_moe, qwen35_moe_vl)}
HF_FAMILIES: dict[str, HfFamily] = {m.HF.model_type: m.HF for m in FAMILIES.values() if hasattr(m, "HF")}
GGUF_FAMILIES: dict[str, GgufFamily] = {m.GGUF.arch: m.GGUF for m in FAMILIES.values() if hasattr(m, "GGUF")}

# tokenizer.ggml.pre values that llama.cpp maps for the vocabularies of architectures this loader does not implement:
# a file of an implemented family may carry one (a model keeps the vocabulary it was trained with)
OTHER_PRE_SPLITS: dict[str, str] = {
    **dict.fromkeys(("phi-2", "mpt", "olmo", "jais", "trillion", "exaone4", "gigachat", "a.x-4.0", "mellum",
                     "jina-es", "jina-de", "jina-v2-es", "jina-v2-de"), "gpt2"),
    **dict.fromkeys(("refact", "command-r", "codeshell", "exaone", "minerva-7b"), "digits_gpt2"),
    **dict.fromkeys(("stablelm2", "megrez", "hunyuan"), "qwen2"),
    **dict.fromkeys(("falcon-h1", "pixtral", "midm-2.0", "lfm2"), "llama3"),
    "dbrx": "llama3_regex",
    "llama4": "gpt4o",
}


def pre_splits() -> dict[str, str]:
    """tokenizer.ggml.pre -> the split's name (checkpoints/gguf_tokenizer.py SPLITS): every family's, and the rest
    of llama.cpp's; a value two records name must mean one split."""
    splits = dict(OTHER_PRE_SPLITS)
    for family in GGUF_FAMILIES.values():
        for pre, split in family.pre_splits.items():
            if splits.setdefault(pre, split) != split:
                raise ValueError(f"tokenizer.ggml.pre {pre!r} names two splits: {splits[pre]!r} and {split!r}")
    return splits


PRE_SPLITS = pre_splits()
