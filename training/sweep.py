"""Train several recipes of one model side by side (one process each) and keep the best.

    python -m training.sweep ../shared/corpus --out runs/sweep --budget 400 --pack OUT

Made for a lent GPU: small models leave it mostly idle, so the recipes share it, each with the
same wall-time budget (`train --time-budget`). The best recipe is the one closest to the goals
on held-out bits per character (English / 1.45 + Chinese / 6.0), among those whose real-text
induction head scores >= 0.3 in both languages and whose previous-token head scores >= 0.5.
`--pack` writes what must travel back in a few files: the best model, its snapshots in
tar parts of at most 16 MB, and every recipe's figures in sweep.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

GOALS = {"en": 1.45, "zh": 6.0}

# name -> train arguments beyond the shared ones (every recipe: tiny-gpt-v2, the shipped tokenizer)
RECIPES: dict[str, list[str]] = {
    "d00": ["--dropout", "0.0"],
    "d10": ["--dropout", "0.1"],
    "d20": ["--dropout", "0.2", "--weight-decay", "0.1"],
    "d30": ["--dropout", "0.3", "--weight-decay", "0.1"],
    "d20-b128": ["--dropout", "0.2", "--weight-decay", "0.1", "--batch-size", "128", "--lr", "3e-3"],
    "d20-less-echo": ["--dropout", "0.2", "--weight-decay", "0.1", "--echo-frac", "0.15", "--span-frac", "0.05"],
    # round 2, after round 1 showed Chinese overfitting from ~1,000 steps at zh-prob 0.4 and batch size costing
    # no time per step
    "d30-b128-zh25": ["--dropout", "0.3", "--weight-decay", "0.1", "--batch-size", "128", "--lr", "3e-3",
                      "--zh-prob", "0.25"],
    "d40-b128-zh25": ["--dropout", "0.4", "--weight-decay", "0.1", "--batch-size", "128", "--lr", "3e-3",
                      "--zh-prob", "0.25"],
    "d30-b128-zh15": ["--dropout", "0.3", "--weight-decay", "0.1", "--batch-size", "128", "--lr", "3e-3",
                      "--zh-prob", "0.15"],
    "d30-b128-zh25-wd3": ["--dropout", "0.3", "--weight-decay", "0.3", "--batch-size", "128", "--lr", "3e-3",
                          "--zh-prob", "0.25"],
    "d30-b256-zh25": ["--dropout", "0.3", "--weight-decay", "0.1", "--batch-size", "256", "--lr", "4e-3",
                      "--zh-prob", "0.25"],
    "d30-b128-zh25-echo5": ["--dropout", "0.3", "--weight-decay", "0.1", "--batch-size", "128", "--lr", "3e-3",
                            "--zh-prob", "0.25", "--echo-frac", "0.5"],
}  # fmt: skip
SHARED = [
    "--config", "tiny-gpt-v2", "--tokenizer-from", "model/weights/tiny-gpt", "--steps", "1000000",
    "--batch-size", "64", "--lr", "2e-3", "--zh-prob", "0.4", "--echo-frac", "0.3", "--span-frac", "0.1",
    "--repeat-frac", "0.05", "--eval-interval", "1000", "--checkpoint-interval", "2000",
    "--snapshot-steps", "100,500,1000,2000,5000", "--no-progress",
]  # fmt: skip


def figures(meta: dict[str, Any]) -> dict[str, Any]:
    """What decides between recipes, from a model's meta."""
    natural = meta.get("natural_best_heads", {})
    return {
        "bits_per_character": meta["bits_per_character"],
        "induction": {lang: r["induction"]["score"] for lang, r in natural.items()},
        "previous_token": max(
            [r["previous-token"]["score"] for r in natural.values()] + [meta["best_heads"]["previous-token"]["score"]]
        ),
        "steps": meta["training"]["steps"],
        "tokens_seen": meta["training"]["tokens_seen"],
    }


def rank(fig: dict[str, Any]) -> tuple[int, float]:
    """(0 if the head goals are met else 1, distance to the bits-per-character goals): lower is better."""
    heads_ok = min(fig["induction"].values(), default=0.0) >= 0.3 and fig["previous_token"] >= 0.5
    distance = sum(fig["bits_per_character"][lang] / goal for lang, goal in GOALS.items())
    return (0 if heads_ok else 1, distance)


def pack(model_dir: Path, out: Path, part_bytes: int = 15_000_000) -> None:
    """model.safetensors, config.json, and the snapshots as tar parts of at most part_bytes each."""
    out.mkdir(parents=True, exist_ok=True)
    for name in ("model.safetensors", "config.json"):
        (out / name).write_bytes((model_dir / name).read_bytes())
    parts: list[list[Path]] = [[]]
    size = 0
    for snap in sorted((model_dir / "snapshots").glob("*.safetensors")):
        if parts[-1] and size + snap.stat().st_size > part_bytes:
            parts.append([])
            size = 0
        parts[-1].append(snap)
        size += snap.stat().st_size
    for i, files in enumerate(p for p in parts if p):
        with tarfile.open(out / f"snapshots-{i}.tar", "w") as tar:
            for f in files:
                tar.add(f, arcname=f"snapshots/{f.name}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--out", type=Path, default=Path("runs/sweep"))
    parser.add_argument("--budget", type=float, default=400.0, help="seconds of wall time per recipe")
    parser.add_argument("--recipes", default=",".join(RECIPES))
    parser.add_argument("--pack", type=Path, default=None, help="write the best model here for transport")
    parser.add_argument("--extra", default="", help="more train arguments for every recipe (space-separated)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    names = [n for n in args.recipes.split(",") if n]
    procs = {}
    for name in names:
        command = [sys.executable, "-m", "training.train", str(args.corpus), *SHARED, *RECIPES[name]]
        command += ["--out", str(args.out / name), "--time-budget", str(args.budget), "--threads", "2"]
        command += args.extra.split()
        log = (args.out / f"{name}.log").open("w")
        procs[name] = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    started = time.time()
    for name, proc in procs.items():
        try:
            proc.wait(timeout=max(1.0, args.budget + 120 - (time.time() - started)))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        print(f"{name}: exit {proc.returncode}", flush=True)
    results = {}
    for name in names:
        config = args.out / name / "model" / "config.json"
        if config.is_file():
            meta = json.loads(config.read_text(encoding="utf-8"))["meta"]
            results[name] = {"figures": figures(meta), "args": RECIPES[name], "history": meta["history"]}
            print(name, json.dumps(results[name]["figures"]), flush=True)
    if not results:
        print("no recipe finished", file=sys.stderr)
        return 1
    best = min(results, key=lambda n: rank(results[n]["figures"]))
    print(f"best: {best}", flush=True)
    summary = {"best": best, "shared_args": SHARED, "budget_seconds": args.budget, "recipes": results}
    (args.out / "sweep.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    if args.pack is not None:
        pack(args.out / best / "model", args.pack)
        (args.pack / "sweep.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
