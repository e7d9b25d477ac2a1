"""The meta written beside a trained language model: what it is, how it was trained, how it scores.

The app reads it (head_scores, snapshots, bos_token, val_loss, ...): keep its keys stable.
"""

from __future__ import annotations

import argparse
import platform
from pathlib import Path
from typing import Any

import torch

from model.transformer import Transformer
from training.corpus import BOS, VAL_WINDOWS, Corpus

DESCRIPTION = (
    "tiny-gpt: a small decoder-only Transformer (RoPE, RMSNorm, SwiGLU, grouped-query attention) trained "
    "from scratch on public-domain English novels (Austen, Chesterton) and Chinese stories (鲁迅)."
)
DESCRIPTION_ZH = "tiny-gpt：一个从零训练的小型仅解码器 Transformer，训练语料为公有领域的英文小说与鲁迅的中文小说。"
# presets shipped under a name of their own: (name, English, Chinese)
SHIPPED: dict[str, tuple[str, str, str]] = {
    "tiny-deltanet": (
        "tiny-deltanet",
        "tiny-deltanet: a small hybrid in Qwen3.5's shape (three gated DeltaNet layers, whose state is a matrix, "
        "then one gated full-attention layer) trained from scratch on the same public-domain English novels and "
        "Chinese stories as tiny-gpt.",
        "tiny-deltanet：一个 Qwen3.5 结构的小型混合模型（三个门控 DeltaNet 层，其状态是一个矩阵，再接一个带门控的"
        "全注意力层），从零训练，语料与 tiny-gpt 相同：公有领域的英文小说与鲁迅的中文小说。",
    ),
}


def device_name(device: str) -> str:
    if device == "cuda" and torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    return f"CPU ({platform.processor() or platform.machine()})"


def language_model_meta(
    args: argparse.Namespace,
    *,
    probe_sentences: dict[str, list[str]],
    tokenizer_figures: dict[str, Any],
    model: Transformer,
    corpus: Corpus,
    state: dict[str, Any],
    evaluation: dict[str, Any],
    n_ctx: int,
    device: str,
    final: bool,
) -> dict[str, Any]:
    """The checkpoint meta of a `train` run: `evaluation` is evaluate() on the weights as shipped."""
    out: Path = args.out
    shipped_default = args.config in ("tiny-gpt", "tiny-gpt-v2")
    name, description, description_zh = SHIPPED.get(args.config) or (
        ("tiny-gpt", DESCRIPTION, DESCRIPTION_ZH) if shipped_default
        else (out.name, f"trained with `transformer-explorer train` ({args.config})",
              f"用 `transformer-explorer train` 训练（{args.config}）"))
    return {
        "name": name,
        "description": description,
        "description_zh": description_zh,
        "language": ["en", "zh"],
        "bos_token": BOS,
        "eos_token": BOS,
        "corpus": corpus.split_summary(),
        "sampling": {
            "zh_prob": args.zh_prob,
            "repeat_frac": args.repeat_frac,
            "span_frac": args.span_frac,
            "echo_frac": args.echo_frac,
            "schedule": state["schedule"],  # one entry per (re)start: mixes may change on --resume
            "note": "text rows are Chinese with probability zh_prob; repeat rows are random BPE tokens "
            "repeated (induction curriculum); span rows copy a span of the first half later; echo rows read "
            "a natural span twice, then what followed it (a sentence typed twice)",
        },
        "training": {
            "steps": state["step"],
            "target_steps": args.steps,
            "finished": final,
            "tokens_seen": state["tokens_seen"],
            "train_seconds": round(state["train_seconds"], 1),
            "tokens_per_second": round(state["tokens_seen"] / max(1e-9, state["train_seconds"])),
            "batch_size": args.batch_size,
            "context": n_ctx,
            "lr": args.lr,
            "seed": args.seed,
            "device": device,
            "device_name": device_name(device),
            "threads": torch.get_num_threads(),
            "optimizer": f"AdamW(0.9, 0.95), weight decay {args.weight_decay}, warmup + cosine to 10%",
            "dropout": args.dropout,
            "time_budget_seconds": args.time_budget,
        },
        "parameters": model.parameter_counts(),
        "val_loss": round(evaluation["val"]["all"], 4),
        "val_loss_by_language": {k: round(v, 4) for k, v in evaluation["val"].items() if k != "all"},
        "val_sample": {
            "windows": VAL_WINDOWS,
            "tokens_per_window": n_ctx,
            "how": "training.corpus.validation_windows on the held-out split, weights as shipped (float16)",
        },
        "bits_per_character": {k: round(v, 4) for k, v in evaluation["bits_per_character"].items()},
        "bits_per_character_how": "training.corpus.bits_per_character: the whole held-out split in rows of "
        "BOS + (context - 1) tokens, total loss in bits / characters, weights as shipped (float16)",
        "tokenizer": getattr(args, "tokenizer", "bpe"),
        "tokenizer_figures": tokenizer_figures,
        "head_scores": evaluation["heads"],
        "best_heads": evaluation["best"],
        "probe_sentences": probe_sentences,
        "natural_head_scores": evaluation["natural"],
        "natural_best_heads": evaluation["natural_best"],
        "snapshots": state["snapshots"],
        "history": state["history"][-200:],
    }
