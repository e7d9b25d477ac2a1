"""The positional-encoding family: six small decoders that differ only in how they know positions.

    python -m training.pe_family ../shared/corpus --out runs/pe-family --steps 1200
    python -m training.pe_family ../shared/corpus --out runs/pe-family --table-only   # re-measure

Members: none, learned, sinusoidal, RoPE, ALiBi, and RoPE with a sliding window. Each is a
`train` run (training.train, so it resumes with the rest) on the same data, seed, steps and
rows of `TRAIN_CONTEXT` tokens. Then `family_table` measures, on the held-out split:

- bits per character at the trained context;
- bits per character at twice the trained context (learned positions have no row past the
  trained context, so that cell is empty and says why);
- a shuffled sentence: held-out sentences with every token but the last put in a random order.
  `last_token_change` is the total-variation distance between the next-token distributions
  after the original and the shuffled sentence. With no positions a causal model only sees
  the *set* of tokens before the last in its first layer: `first_layer_change` (the relative
  change of the last position's residual stream after layer 0's attention) is 0 up to
  rounding. Deeper layers read keys that were themselves computed under the causal mask, so a
  no-position model with two layers can still notice order (`last_token_change` > 0);
  `bits_per_token_*` is the mean loss per token in bits on the original and shuffled sentences.

The table goes into every member's meta (`pe_family`), so the app shows it beside the model.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from analysis.heads import bos_id_for
from checkpoints import LoadedModel, load_checkpoint
from model.hooks import stage_name
from model.transformer import Transformer
from training.corpus import Corpus, bits_per_character, held_out_sentences, load_corpus

TRAIN_CONTEXT = 64
BASE = dict(
    architecture="decoder",
    d_model=64,
    n_layers=2,
    n_heads=4,
    n_kv_heads=4,
    d_mlp=192,
    n_ctx=2 * TRAIN_CONTEXT,
    norm="rmsnorm",
    norm_placement="pre",
    activation="swiglu",
    bias=False,
    tied_embeddings=True,
)
MEMBERS: dict[str, dict[str, Any]] = {
    "pe-none": dict(pos_encoding="none"),
    # a learned table has exactly the rows it was trained on
    "pe-learned": dict(pos_encoding="learned", n_ctx=TRAIN_CONTEXT),
    "pe-sinusoidal": dict(pos_encoding="sinusoidal"),
    "pe-rope": dict(pos_encoding="rope"),
    "pe-alibi": dict(pos_encoding="alibi"),
    "pe-rope-window": dict(pos_encoding="rope", sliding_window=16),
}
DESCRIPTIONS = {
    "pe-none": ("no positional encoding", "没有位置编码"),
    "pe-learned": ("learned absolute positions (64 rows)", "可学习的绝对位置表（64 行）"),
    "pe-sinusoidal": ("sinusoidal absolute positions", "正弦绝对位置编码"),
    "pe-rope": ("rotary positions (RoPE)", "旋转位置编码（RoPE）"),
    "pe-alibi": ("ALiBi distance penalties", "ALiBi 距离惩罚"),
    "pe-rope-window": ("RoPE with a 16-token sliding window", "RoPE 加 16 个 Token 的滑动窗口"),
}


def member_config(name: str) -> dict[str, Any]:
    return {**BASE, **MEMBERS[name]}


def train_member(name: str, corpus_paths: list[Path], out: Path, steps: int, threads: int, seed: int) -> None:
    """One member as a `train` run in out/name (resuming when a checkpoint is there)."""
    from training import train

    out.mkdir(parents=True, exist_ok=True)
    config_path = out / f"{name}.config.json"
    config_path.write_text(json.dumps(member_config(name), indent=1), encoding="utf-8")
    parser = argparse.ArgumentParser()
    train.add_arguments(parser)
    args = parser.parse_args(
        [str(p) for p in corpus_paths]
        + ["--config", str(config_path), "--out", str(out / name), "--steps", str(steps), "--seed", str(seed)]
        + ["--context", str(TRAIN_CONTEXT), "--lr", "3e-3", "--warmup", "100", "--batch-size", "32"]
        + ["--repeat-frac", "0", "--span-frac", "0.1", "--echo-frac", "0.2", "--echo-max-copies", "2"]
        + ["--zh-prob", "0.3"]
        + ["--eval-interval", str(max(100, steps // 6)), "--checkpoint-interval", "200", "--snapshot-steps", ""]
        + ["--threads", str(threads), "--resume", "--no-progress"]
    )
    train.main(args)


@torch.no_grad()
def shuffle_probe(model: Transformer, sentences: list[list[int]], bos_id: int, seed: int = 0) -> dict[str, float]:
    """Shuffle every token of a sentence but the last; how much does the last prediction move?"""
    rng = np.random.default_rng(seed)
    changes, first_layer, bits_original, bits_shuffled = [], [], [], []
    model.eval()
    for ids in sentences:
        ids = ids[: model.cfg.n_ctx - 1]
        if len(ids) < 4:
            continue
        order = rng.permutation(len(ids) - 1)
        shuffled = [ids[i] for i in order] + [ids[-1]]
        rows = torch.tensor([[bos_id, *ids], [bos_id, *shuffled]], device=model.device)
        first = stage_name("resid_mid", 0)  # after layer 0's attention
        logits, trace = model.run_with_trace(rows, names=[first])
        logits = logits.float()  # [2, pos, d_vocab]
        resid = trace[first][:, -1].float()  # [2, d_model]
        first_layer.append(float((resid[0] - resid[1]).norm() / resid[0].norm()))
        last = logits[:, -1].softmax(-1)
        changes.append(0.5 * float((last[0] - last[1]).abs().sum()))
        nats = F.cross_entropy(logits[:, :-1].transpose(1, 2), rows[:, 1:], reduction="none").mean(-1)
        bits_original.append(float(nats[0]) / np.log(2))
        bits_shuffled.append(float(nats[1]) / np.log(2))
    return {
        "last_token_change": float(np.mean(changes)),
        "first_layer_change": float(np.mean(first_layer)),
        "bits_per_token_original": float(np.mean(bits_original)),
        "bits_per_token_shuffled": float(np.mean(bits_shuffled)),
        "sentences": len(changes),
    }


def member_row(name: str, loaded: LoadedModel, corpus: Corpus) -> dict[str, Any]:
    model, tokenizer = loaded.model.eval(), loaded.tokenizer
    bos_id = bos_id_for(tokenizer, loaded.meta)
    assert bos_id is not None
    trained = bits_per_character(model, tokenizer, corpus, TRAIN_CONTEXT, bos_id)  # type: ignore[arg-type]
    row: dict[str, Any] = {
        "model": name,
        "pos_encoding": model.cfg.pos_encoding,
        "sliding_window": model.cfg.sliding_window,
        "parameters": model.parameter_counts()["total"],
        "trained_context": TRAIN_CONTEXT,
        "bits_per_character": {k: round(v, 4) for k, v in trained.items()},
    }
    if model.cfg.n_ctx >= 2 * TRAIN_CONTEXT:
        double = bits_per_character(model, tokenizer, corpus, 2 * TRAIN_CONTEXT, bos_id)  # type: ignore[arg-type]
        row["bits_per_character_2x"] = {k: round(v, 4) for k, v in double.items()}
    else:
        row["bits_per_character_2x"] = None
        row["bits_per_character_2x_why"] = (
            f"a learned position table has {model.cfg.n_ctx} rows: position {model.cfg.n_ctx} has no vector"
        )
    sentences = [[t.id for t in tokenizer.encode(s)] for s in held_out_sentences(corpus, "en")]
    row["shuffle"] = {
        k: round(v, 6) if isinstance(v, float) else v for k, v in shuffle_probe(model, sentences, bos_id).items()
    }
    row["training"] = {k: loaded.meta["training"][k] for k in ("steps", "tokens_seen", "train_seconds", "threads")}
    return row


def family_table(model_dirs: dict[str, Path], corpus: Corpus) -> dict[str, Any]:
    rows = [member_row(name, load_checkpoint(path), corpus) for name, path in model_dirs.items()]
    return {
        "how": "python -m training.pe_family: held-out split of the corpus (last 5% of each file); bits per "
        f"character with rows of {TRAIN_CONTEXT} and {2 * TRAIN_CONTEXT} tokens; shuffle: the held-out English "
        "probe sentences with all tokens but the last shuffled (seed 0)",
        "members": rows,
    }


def markdown(table: dict[str, Any]) -> str:
    lines = [
        "| model | bits/char EN | bits/char ZH | at 2× context EN | at 2× context ZH | shuffled: layer-0 change "
        "| shuffled: last-token change | shuffled: bits/token before → after |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in table["members"]:
        bpc, double, shuffle = row["bits_per_character"], row["bits_per_character_2x"], row["shuffle"]
        twice = (f"{double['en']:.3f}", f"{double['zh']:.3f}") if double else ("cannot (no row)", "cannot (no row)")
        lines.append(
            f"| {row['model']} | {bpc['en']:.3f} | {bpc['zh']:.3f} | {twice[0]} | {twice[1]} | "
            f"{shuffle['first_layer_change']:.2g} | {shuffle['last_token_change']:.4f} | "
            f"{shuffle['bits_per_token_original']:.2f} → {shuffle['bits_per_token_shuffled']:.2f} |"
        )
    return "\n".join(lines)


def ship(table: dict[str, Any], run_dirs: dict[str, Path], weights: Path) -> None:
    """Copy each member's model (no snapshots) into weights/NAME with the table in its meta."""
    for name, run_dir in run_dirs.items():
        target = weights / name
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        for file in ("model.safetensors", "tokenizer.json"):
            shutil.copy(run_dir / file, target / file)
        document = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
        english, chinese = DESCRIPTIONS[name]
        document["meta"]["name"] = name
        document["meta"]["description"] = (
            f"{name}: a positional-encoding family member, {english}; the six members differ only in positions."
        )
        document["meta"]["description_zh"] = f"{name}：位置编码对照组之一，{chinese}；六个模型只有位置编码不同。"
        document["meta"]["snapshots"] = []
        document["meta"]["pe_family"] = table
        (target / "config.json").write_text(json.dumps(document, ensure_ascii=False, indent=1), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.pe_family", description=__doc__.split("\n")[0])
    parser.add_argument("corpus", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=Path("runs/pe-family"))
    parser.add_argument("--steps", type=int, default=1200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--members", default=",".join(MEMBERS), help="comma-separated subset")
    parser.add_argument("--table-only", action="store_true", help="measure the trained members, do not train")
    parser.add_argument("--ship", type=Path, default=None, help="copy the members into this weights folder")
    args = parser.parse_args(argv)
    names = [n for n in args.members.split(",") if n]
    if args.threads:
        torch.set_num_threads(args.threads)
    if not args.table_only:
        for name in names:
            train_member(name, args.corpus, args.out, args.steps, args.threads, args.seed)
    run_dirs = {name: args.out / name / "model" for name in names}
    table = family_table(run_dirs, load_corpus(args.corpus))
    (args.out / "table.json").write_text(json.dumps(table, indent=1), encoding="utf-8")
    print(markdown(table))
    if args.ship is not None:
        ship(table, run_dirs, args.ship)
    return 0


if __name__ == "__main__":
    sys.exit(main())
