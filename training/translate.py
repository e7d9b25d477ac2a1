"""Train and evaluate tiny-translator (numbers -> English words / Chinese numerals, see training.numbers).

    python -m training.translate train --out runs/tiny-translator           # trains the shipped model
    python -m training.translate train --out runs/tiny-translator --resume  # continues from its checkpoint
    python -m training.translate translate model/weights/tiny-translator 2026 --lang zh

`translate(model, tokenizer, "2026", "zh")` decodes greedily through model.generate.
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import torch

from analysis.heads import head_scores
from checkpoints import save_checkpoint
from model.config import TransformerConfig
from model.generate import generate_greedy_batch
from model.tokenizer import CharTokenizer
from model.transformer import Transformer
from optimization.loop import adamw, train_loop
from training.checkpointing import load_training_state, save_training_state
from training.numbers import (
    ALPHABET,
    BOS,
    EOS,
    LANGUAGES,
    PAD,
    TASK_DESCRIPTION,
    NumberTranslationTask,
    make_tokenizer,
    sample_number,
    source_text,
    target_text,
)
from training.schedule import learning_rate

TRANSLATOR_CONFIG = dict(
    architecture="encoder-decoder",
    d_model=128,
    n_layers=2,
    n_decoder_layers=2,
    n_heads=4,
    d_mlp=256,
    n_ctx=64,
    pos_encoding="sinusoidal",
    norm="layernorm",
    norm_placement="post",
    activation="relu",
    bias=True,
    tied_embeddings=True,
    scale_embeddings=True,
    final_norm=False,
)
WARMUP_STEPS = 300


def translate_batch(model: Transformer, tokenizer: CharTokenizer, sources: list[str], max_len: int = 64) -> list[str]:
    """Greedy decoding of full source strings ('en:2026'), batched."""
    model.eval()
    new_ids = generate_greedy_batch(
        model,
        [[t.id for t in tokenizer.encode(s)] for s in sources],
        start_id=tokenizer.token_id(BOS),
        stop_id=tokenizer.token_id(EOS),
        pad_id=tokenizer.token_id(PAD),
        max_new_tokens=max_len,
    )
    return [tokenizer.decode(ids) for ids in new_ids]


def translate(model: Transformer, tokenizer: CharTokenizer, number: int | str, lang: str = "en") -> str:
    """Greedy decode one number: translate(model, tok, 2026, "zh") -> '二千零二十六'."""
    source = str(number) if ":" in str(number) else source_text(int(number), lang)
    return translate_batch(model, tokenizer, [source])[0]


def exact_match(model: Transformer, tokenizer: CharTokenizer, n: int = 200, seed: int = 12345) -> dict[str, Any]:
    """Greedy exact match on a fresh random sample of n numbers, each asked in both languages."""
    rng = random.Random(seed)
    numbers = [sample_number(rng) for _ in range(n)]
    result: dict[str, Any] = {"n": n, "seed": seed}
    wrong: list[str] = []
    total = 0
    for lang in LANGUAGES:
        got = translate_batch(model, tokenizer, [source_text(x, lang) for x in numbers])
        hits = 0
        for x, text in zip(numbers, got, strict=True):
            if text == target_text(x, lang):
                hits += 1
            elif len(wrong) < 10:
                wrong.append(f"{source_text(x, lang)} -> {text!r} (want {target_text(x, lang)!r})")
        result[lang] = hits / n
        total += hits
    result["all"] = total / (2 * n)
    result["errors"] = wrong
    return result


def translator_meta(
    model: Transformer, shipped: Transformer, tokenizer: CharTokenizer, state: dict[str, Any], settings: dict[str, Any]
) -> dict[str, Any]:
    """The checkpoint meta: examples, exact match and head scores measured on the float16-rounded weights."""
    em = exact_match(shipped, tokenizer, n=500, seed=2024)
    return {
        "name": "tiny-translator",
        "description": "tiny-translator: the original encoder-decoder Transformer (sinusoidal positions, Post-LN, "
        "ReLU, multi-head attention) trained to spell numbers in English words and Chinese numerals.",
        "description_zh": "tiny-translator：原始的编码器-解码器 Transformer，学会把阿拉伯数字写成英文单词或中文数字。",
        "task": TASK_DESCRIPTION,
        "examples": {
            s: translate_batch(shipped, tokenizer, [s])[0] for s in ("en:2026", "zh:2026", "en:15", "zh:40300")
        },
        "bos_token": BOS,
        "eos_token": EOS,
        "pad_token": PAD,
        "source_format": "en:<digits> or zh:<digits>",
        "training": {
            "steps": settings["steps"],
            "batch_size": settings["batch"],
            "examples_seen": state["examples_seen"],
            "train_seconds": round(state["seconds"], 1),
            "lr": settings["lr"],
            "seed": settings["seed"],
            "device": "cpu",
            "threads": torch.get_num_threads(),
        },
        "exact_match": em["all"],
        "exact_match_detail": {k: v for k, v in em.items() if k != "errors"},
        "exact_match_errors": em["errors"],
        "parameters": model.parameter_counts(),
        "history": state["history"],
        "head_scores": head_scores(shipped, token_range=(256, 256 + len(ALPHABET)), seq_len=20),
    }


def translator_config(
    tokenizer: CharTokenizer, seed: int, model_overrides: dict[str, Any] | None = None
) -> TransformerConfig:
    """TRANSLATOR_CONFIG for this tokenizer; model_overrides (e.g. a smaller d_model for tests) go on top."""
    fields = {**TRANSLATOR_CONFIG, **(model_overrides or {})}
    return TransformerConfig.from_dict(
        {**fields, "vocab_size": tokenizer.vocab_size, "pad_token_id": tokenizer.token_id(PAD), "seed": seed}
    )


def saved_config(checkpoint_dir: Path) -> TransformerConfig | None:
    """The model config of the run checkpointed in checkpoint_dir, or None when there is no checkpoint."""
    state_file = checkpoint_dir / "state.json"
    if not state_file.is_file():
        return None
    return TransformerConfig.from_dict(json.loads(state_file.read_text(encoding="utf-8"))["config"])


def note_changed_settings(saved: dict[str, Any], settings: dict[str, Any]) -> None:
    """A resumed run takes the command's settings; say which differ, since they change the schedule or the data."""
    changed = [f"{k} {saved[k]} -> {v}" for k, v in settings.items() if k in saved and saved[k] != v]
    if changed:
        print("resuming with other settings: " + ", ".join(changed), flush=True)


def train(
    out: Path,
    steps: int,
    batch: int,
    lr: float,
    seed: int,
    threads: int,
    log_every: int = 250,
    *,
    resume: bool = False,
    checkpoint_interval: int = 250,
    model_overrides: dict[str, Any] | None = None,
) -> int:
    """Train tiny-translator on the CPU and save it (float16) in `out`.

    Every checkpoint_interval steps and at the end, out/checkpoint holds the weights, optimizer,
    step and RNG states; resume=True continues from there (the model config comes from the
    checkpoint, so model_overrides only shape a fresh run).
    """
    if threads:
        torch.set_num_threads(threads)
    torch.manual_seed(seed)
    tokenizer = make_tokenizer()
    checkpoint_dir = out / "checkpoint"
    cfg = saved_config(checkpoint_dir) if resume else None
    resuming = cfg is not None
    if resume and not resuming:
        print(f"--resume: no checkpoint in {checkpoint_dir}, starting afresh", flush=True)
    cfg = cfg or translator_config(tokenizer, seed, model_overrides)
    model = Transformer(cfg)
    optimizer = adamw(model, lr=lr, betas=(0.9, 0.98), weight_decay=0.01, decay_vectors_and_embeddings=True)
    task = NumberTranslationTask(tokenizer, batch, random.Random(seed))
    settings = {"steps": steps, "batch": batch, "lr": lr, "seed": seed}
    state: dict[str, Any] = {"step": 0, "examples_seen": 0, "seconds": 0.0, "history": []}
    if resuming:
        state = load_training_state(checkpoint_dir, model, optimizer, task)
        note_changed_settings(state.get("settings", {}), settings)
        print(f"resumed at step {state['step']} ({state['examples_seen']:,} examples seen)", flush=True)
    state.update(config=cfg.to_dict(), settings=settings)
    started, seconds_before = time.time(), state["seconds"]

    def after_step(step: int, loss: float) -> None:
        state["examples_seen"] += batch
        state["seconds"] = seconds_before + time.time() - started  # wall time over every (re)start
        if step % log_every == 0 or step == steps:
            em = exact_match(model, tokenizer, n=50, seed=999)
            model.train()
            state["history"].append({"step": step, "loss": round(loss, 4), "exact_match": em["all"]})
            print(
                f"step {step}: loss {loss:.4f} exact match {em['all']:.3f} (en {em['en']:.2f} zh {em['zh']:.2f})"
                f" {time.time() - started:.0f} s",
                flush=True,
            )
        if step % checkpoint_interval == 0 or step == steps:
            save_training_state(checkpoint_dir, model, optimizer, task, state)

    lr_at = functools.partial(learning_rate, peak=lr, warmup=WARMUP_STEPS, total=steps, floor=0.05)
    train_loop(model, optimizer, task, state=state, total_steps=steps, lr_at=lr_at, after_step=after_step)
    model.eval()
    shipped = Transformer(cfg)
    shipped.load_state_dict({k: v.half().float() for k, v in model.state_dict().items()})
    shipped.eval()
    meta = translator_meta(model, shipped, tokenizer, state, settings)
    save_checkpoint(out, model, tokenizer, meta, dtype=torch.float16)
    summary = {k: meta[k] for k in ("exact_match", "exact_match_detail", "examples", "training")}
    print(json.dumps(summary, ensure_ascii=False, indent=1), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.translate")
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="train tiny-translator")
    t.add_argument("--out", type=Path, default=Path("runs/tiny-translator"))
    t.add_argument("--steps", type=int, default=2500)
    t.add_argument("--batch-size", type=int, default=48)
    t.add_argument("--lr", type=float, default=1.5e-3)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--threads", type=int, default=1)
    t.add_argument("--checkpoint-interval", type=int, default=250, help="steps between OUT/checkpoint saves")
    t.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint")
    d = sub.add_parser("translate", help="translate numbers with a trained model")
    d.add_argument("model_dir", type=Path)
    d.add_argument("numbers", nargs="+")
    d.add_argument("--lang", choices=LANGUAGES, default="en")
    args = parser.parse_args(argv)
    if args.command == "train":
        return train(
            args.out,
            args.steps,
            args.batch_size,
            args.lr,
            args.seed,
            args.threads,
            resume=args.resume,
            checkpoint_interval=args.checkpoint_interval,
        )
    from checkpoints import load_checkpoint

    loaded = load_checkpoint(args.model_dir)
    for number in args.numbers:
        print(number, "->", translate(loaded.model, loaded.tokenizer, number, args.lang))  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    sys.exit(main())
