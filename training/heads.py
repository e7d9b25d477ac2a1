"""Score every attention head of a checkpoint on the named patterns (model.heads) and print a table.

python -m training.heads model/weights/tiny-gpt [--json] [--seq-len 40]
transformer-explorer heads model/weights/tiny-gpt
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from model.checkpoint import load_checkpoint
from model.heads import PATTERNS, best_heads, bos_id_for, head_scores


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("--json", action="store_true", help="print the scores as JSON")
    parser.add_argument("--seq-len", type=int, default=40)


def run(args: argparse.Namespace) -> int:
    loaded = load_checkpoint(args.model_dir)
    bos = bos_id_for(loaded.tokenizer, loaded.meta)
    results = head_scores(loaded.model, bos_id=bos, seq_len=args.seq_len)
    if args.json:
        print(json.dumps({"heads": results, "best": best_heads(results)}, indent=2))
        return 0
    print(f"{'stack':8} {'L':>2} {'H':>2}  " + " ".join(f"{p[:10]:>10}" for p in PATTERNS) + "  label")
    for r in results:
        row = " ".join(f"{r['scores'][p]:10.3f}" for p in PATTERNS)
        print(f"{r.get('stack', ''):8} {r['layer']:2d} {r['head']:2d}  {row}  {r['label']}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.heads", description=__doc__.split("\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
