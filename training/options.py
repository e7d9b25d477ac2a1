"""The `train` command's options and the model config they name (a preset or a JSON file)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from model.config import TransformerConfig
from training.presets import PRESETS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("corpus", nargs="+", type=Path, help="corpus folder(s) or .txt file(s), e.g. ../shared/corpus")
    parser.add_argument(
        "--config",
        default="tiny-gpt",
        help=f"a JSON file of TransformerConfig fields or a preset: {', '.join(PRESETS)}",
    )
    parser.add_argument("--out", type=Path, default=Path("runs/tiny-gpt"), help="run folder (checkpoints, model)")
    parser.add_argument("--steps", type=int, default=8000, help="optimizer steps in total")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument(
        "--context",
        type=int,
        default=None,
        help="tokens per training row (default: the config's n_ctx; the model keeps its n_ctx, so it can be "
        "evaluated on longer text than it was trained on)",
    )
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--weight-decay", type=float, default=0.05, help="AdamW weight decay of the matrices")
    parser.add_argument(
        "--dropout",
        type=float,
        default=0.0,
        help="residual dropout while training (training.regularization); the shipped model has none",
    )
    parser.add_argument(
        "--time-budget",
        type=float,
        default=0.0,
        help="seconds of wall time for the whole run: after the first 100 steps, --steps is set to what fits "
        "(0: train exactly --steps)",
    )
    parser.add_argument(
        "--tokenizer",
        choices=("v2", "bpe"),
        default="v2",
        help="v2: English BPE + whole Chinese characters (training.vocabulary); bpe: one byte-level BPE (v1)",
    )
    parser.add_argument(
        "--tokenizer-from",
        type=Path,
        default=None,
        help="reuse the tokenizer.json in this folder (e.g. model/weights/tiny-gpt) instead of building one",
    )
    parser.add_argument("--vocab-size", type=int, default=2048, help="bpe: the BPE's vocabulary size")
    parser.add_argument("--english-vocab", type=int, default=4000, help="v2: the English BPE's vocabulary size")
    parser.add_argument(
        "--min-char-count", type=int, default=3, help="v2: a Chinese character seen this often is a token"
    )
    parser.add_argument("--zh-prob", type=float, default=0.3, help="share of text rows drawn from Chinese")
    parser.add_argument("--repeat-frac", type=float, default=0.25, help="share of rows of repeated random tokens")
    parser.add_argument("--span-frac", type=float, default=0.25, help="share of text rows with a copied span")
    parser.add_argument(
        "--echo-frac",
        type=float,
        default=0.0,
        help="share of rows that read a natural span twice (s s + what followed)",
    )
    parser.add_argument("--echo-max-copies", type=int, default=4, help="echo rows read their span 2..N times")
    parser.add_argument("--eval-interval", type=int, default=250)
    parser.add_argument("--checkpoint-interval", type=int, default=500)
    parser.add_argument(
        "--snapshot-steps",
        default="100,300,1000,3000",
        help="comma-separated steps at which to keep a float16 snapshot (the final step is added)",
    )
    parser.add_argument("--max-chars", type=int, default=None, help="use only the first N characters of each file")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    parser.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint")
    parser.add_argument("--no-progress", action="store_true", help="no tqdm bar (log lines only)")


def resolve_config(spec: str, vocab_size: int, n_ctx: int | None, seed: int) -> TransformerConfig:
    """--config: a JSON file of TransformerConfig fields (or a checkpoint's config.json) or a preset name."""
    path = Path(spec)
    if path.suffix == ".json" or path.is_file():
        fields = json.loads(path.read_text(encoding="utf-8"))
        fields = fields.get("config", fields)
    elif spec in PRESETS:
        fields = dict(PRESETS[spec])
    else:
        raise SystemExit(f"--config {spec!r} is neither a JSON file nor a preset ({', '.join(PRESETS)})")
    fields["vocab_size"] = vocab_size
    if n_ctx is not None and "n_ctx" not in fields:
        fields["n_ctx"] = n_ctx
    fields["seed"] = seed
    if fields.get("architecture", "decoder") != "decoder":
        raise SystemExit("the train command trains decoder-only language models")
    return TransformerConfig.from_dict(fields)
