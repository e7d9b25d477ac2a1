"""Train a small decoder-only language model on an English + Chinese text corpus.

    transformer-explorer train ../shared/corpus --config tiny-gpt --steps 8000 --out runs/tiny-gpt
    python -m training.train ...   (the same command)

The corpus, tokenizer and validation sample come from `training.corpus`; the rows and their
copying curricula from `training.language_modelling`; the steps from `optimization.loop` with the
schedule of `training.schedule` (AdamW, warmup + cosine to 10%). Every `--eval-interval` steps:
validation loss and head scores; at `--snapshot-steps`: a float16 snapshot. Every
`--checkpoint-interval` steps: OUT/checkpoint (weights, optimizer, step, RNG states; `--resume`
continues from it) and the usable model in OUT/model (config.json + model.safetensors +
tokenizer.json, float16) with its figures in the meta.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import Any

import torch

from analysis.heads import best_heads, head_scores, natural_head_scores
from checkpoints import save_checkpoint
from model.config import TransformerConfig
from model.device import pick_device
from model.tokenizer import HubTokenizer, load_tokenizer
from model.transformer import Transformer
from optimization.loop import adamw, train_loop
from training.checkpointing import load_training_state, rounded_copy, save_snapshot, save_training_state
from training.corpus import (
    BOS,
    Corpus,
    bits_per_character,
    encode_docs,
    held_out_sentences,
    load_corpus,
    train_bpe,
    validation_loss,
    validation_windows,
)
from training.deltanet_init import init_hybrid
from training.language_modelling import Batcher, LanguageModelTask
from training.meta import language_model_meta
from training.options import add_arguments, resolve_config
from training.schedule import learning_rate
from training.vocabulary import build_tokenizer, tokenizer_figures


def log(message: str) -> None:
    print(message, flush=True)


def load_or_train_tokenizer(args: argparse.Namespace, corpus: Corpus, resuming: bool) -> tuple[HubTokenizer, int]:
    """The run's BPE (kept in OUT/tokenizer.json so a resumed run reuses it) and its BOS id."""
    started = time.time()
    reuse = args.out if resuming and (args.out / "tokenizer.json").is_file() else args.tokenizer_from
    if reuse is not None:
        loaded = load_tokenizer(reuse)
        assert isinstance(loaded, HubTokenizer)
        tokenizer = loaded
        if reuse != args.out:
            tokenizer.save(args.out)
    elif args.tokenizer == "v2":
        tokenizer = build_tokenizer(corpus, args.english_vocab, args.min_char_count)
        tokenizer.save(args.out)
    else:
        tokenizer = train_bpe(corpus, args.vocab_size)
        tokenizer.save(args.out)
    bos_id = tokenizer.token_id(BOS)
    if bos_id is None:
        raise SystemExit(f"the tokenizer in {args.out} has no {BOS} token")
    log(f"tokenizer: {args.tokenizer}, {tokenizer.vocab_size} tokens ({time.time() - started:.1f} s)")
    return tokenizer, bos_id


class LanguageModelRun:
    """One `train` invocation: corpus, tokenizer, model, optimizer and state, and what follows each step."""

    def __init__(self, args: argparse.Namespace) -> None:
        if args.threads:
            torch.set_num_threads(args.threads)
        self.args = args
        self.device = pick_device(args.device).type  # "cpu" or "cuda", as the meta records it
        if self.device == "cuda":
            torch.set_float32_matmul_precision("high")  # TF32 matmuls for training steps
        torch.manual_seed(args.seed)
        args.out.mkdir(parents=True, exist_ok=True)
        self.checkpoint_dir, self.model_dir = args.out / "checkpoint", args.out / "model"
        resuming = args.resume and (self.checkpoint_dir / "state.json").is_file()
        if args.resume and not resuming:
            log(f"--resume: no checkpoint in {self.checkpoint_dir}, starting afresh")

        self.corpus = load_corpus(args.corpus, args.max_chars)
        if not self.corpus.train["en"] and not self.corpus.train["zh"]:
            raise SystemExit("the corpus is empty")
        self.tokenizer, self.bos_id = load_or_train_tokenizer(args, self.corpus, resuming)
        if resuming:
            saved = json.loads((self.checkpoint_dir / "state.json").read_text(encoding="utf-8"))
            cfg = TransformerConfig.from_dict(saved["config"])
        else:
            cfg = resolve_config(args.config, self.tokenizer.vocab_size, args.context, args.seed)
        self.n_ctx = cfg.n_ctx if args.context is None else min(args.context, cfg.n_ctx)
        streams = {
            lang: encode_docs(self.tokenizer, docs, self.bos_id) for lang, docs in self.corpus.train.items() if docs
        }
        self.val_windows = validation_windows(self.tokenizer, self.corpus, self.n_ctx, self.bos_id)
        self.probe_sentences = {lang: held_out_sentences(self.corpus, lang) for lang in ("en", "zh")}
        self.tokenizer_figures = tokenizer_figures(self.tokenizer, self.corpus) if self.corpus.train["en"] else {}
        self.probe_ids = {
            lang: [[t.id for t in self.tokenizer.encode(s)] for s in sentences]
            for lang, sentences in self.probe_sentences.items()
            if sentences
        }
        log("train tokens: " + ", ".join(f"{k} {len(v):,}" for k, v in streams.items()))

        self.model = Transformer(cfg)
        init_hybrid(self.model, args.seed)  # a hybrid's DeltaNet layers start as transformers starts them
        self.model = self.model.to(self.device)
        self.model.train()
        self.optimizer = adamw(
            self.model,
            lr=args.lr,
            betas=(0.9, 0.95),
            weight_decay=args.weight_decay,
            decay_vectors_and_embeddings=False,
        )
        self.batcher = Batcher(
            streams,
            self.n_ctx,
            args.batch_size,
            self.bos_id,
            self.tokenizer.vocab_size,
            args.zh_prob,
            args.repeat_frac,
            args.span_frac,
            args.seed,
            echo_frac=args.echo_frac,
            echo_max_copies=args.echo_max_copies,
        )
        self.state: dict[str, Any] = {
            "step": 0,
            "tokens_seen": 0,
            "train_seconds": 0.0,
            "history": [],
            "snapshots": [],
        }
        if resuming:
            self.state = load_training_state(self.checkpoint_dir, self.model, self.optimizer, self.batcher)
            log(f"resumed at step {self.state['step']} ({self.state['tokens_seen']:,} tokens seen)")
        self.state["config"] = cfg.to_dict()
        self.record_schedule_segment()
        self.snapshot_steps = {int(s) for s in str(args.snapshot_steps).split(",") if s.strip()} | {args.steps}
        self.tokens_per_step = args.batch_size * (self.n_ctx - 1)
        self.loss_ema: float | None = None
        self.eval_seconds: list[float] = []  # wall time of each evaluation (+ model write), for --time-budget
        self.started = time.time()
        n_params = self.model.parameter_counts()["total"]
        log(f"model: {n_params:,} parameters, context {self.n_ctx}, device {self.device}")

    def record_schedule_segment(self) -> None:
        """One schedule entry per (re)start: the data mix and target may change on --resume."""
        args, step = self.args, self.state["step"]
        segment = {
            "from_step": step,
            "repeat_frac": args.repeat_frac,
            "span_frac": args.span_frac,
            "echo_frac": args.echo_frac,
            "echo_max_copies": args.echo_max_copies,
            "zh_prob": args.zh_prob,
            "target_steps": args.steps,
            "lr": args.lr,
            "dropout": args.dropout,
            "weight_decay": args.weight_decay,
        }
        self.state["schedule"] = [s for s in self.state.get("schedule", []) if s["from_step"] < step] + [segment]

    def evaluate(self, model: Transformer) -> dict[str, Any]:
        losses = validation_loss(model, self.val_windows)
        heads = head_scores(model, bos_id=self.bos_id, token_range=(1, self.tokenizer.vocab_size))
        natural = {lang: natural_head_scores(model, ids, bos_id=self.bos_id) for lang, ids in self.probe_ids.items()}
        bpc = bits_per_character(model, self.tokenizer, self.corpus, self.n_ctx, self.bos_id)
        return {
            "val": losses,
            "heads": heads,
            "best": best_heads(heads),
            "natural": natural,
            "natural_best": {lang: best_heads(r) for lang, r in natural.items()},
            "bits_per_character": bpc,
        }

    def write_model(self, final: bool) -> None:
        """OUT/model in float16, its meta measured on the rounded weights the app will load."""
        evaluation = self.evaluate(rounded_copy(self.model, torch.float16))
        meta = language_model_meta(
            self.args,
            probe_sentences=self.probe_sentences,
            tokenizer_figures=self.tokenizer_figures,
            model=self.model,
            corpus=self.corpus,
            state=self.state,
            evaluation=evaluation,
            n_ctx=self.n_ctx,
            device=self.device,
            final=final,
        )
        save_checkpoint(self.model_dir, self.model, self.tokenizer, meta, dtype=torch.float16)

    def record_evaluation(self, step: int, write: Callable[[str], None]) -> None:
        """Validation loss and head scores into the history (and a snapshot at a snapshot step)."""
        started = time.time()
        result = self.evaluate(self.model)
        best = result["best"]
        entry = {
            "step": step,
            "tokens_seen": self.state["tokens_seen"],
            "train_loss": round(self.loss_ema or 0.0, 4),
            "val_loss": round(result["val"]["all"], 4),
            "val_en": round(result["val"].get("en", float("nan")), 4),
            "val_zh": round(result["val"].get("zh", float("nan")), 4),
            "prev_token": best["previous-token"],
            "induction": best["induction"],
            "natural": {
                lang: {k: b[k] for k in ("previous-token", "induction")} for lang, b in result["natural_best"].items()
            },
            "bits_per_character": {k: round(v, 4) for k, v in result["bits_per_character"].items()},
        }
        self.state["history"].append(entry)
        prev, induction = best["previous-token"], best["induction"]
        write(
            f"step {step}: train {self.loss_ema:.3f} val {entry['val_loss']:.3f} (en {entry['val_en']:.3f}, "
            f"zh {entry['val_zh']:.3f}) prev-token {prev['score']:.2f} L{prev['layer']}H{prev['head']} induction "
            f"{induction['score']:.2f} L{induction['layer']}H{induction['head']} natural induction "
            + " ".join(f"{k} {v['induction']['score']:.2f}" for k, v in entry["natural"].items())
            + " bits/char "
            + " ".join(f"{k} {v:.3f}" for k, v in entry["bits_per_character"].items())
            + f" tok/s {self.state['tokens_seen'] / self.state['train_seconds']:,.0f}"
        )
        if step in self.snapshot_steps:
            self.model_dir.mkdir(parents=True, exist_ok=True)
            relative = save_snapshot(self.model, self.model_dir, step)
            snapshot = {
                "step": step,
                "file": relative,
                "val_loss": entry["val_loss"],
                "tokens_seen": self.state["tokens_seen"],
                "best_heads": {k: best[k] for k in ("previous-token", "induction", "first-token")},
                "natural_best_heads": entry["natural"],
            }
            self.state["snapshots"] = [s for s in self.state["snapshots"] if s["step"] != step] + [snapshot]
        self.eval_seconds.append(time.time() - started)

    def fit_steps_to_budget(self, write: Callable[[str], None]) -> None:
        """--time-budget: set --steps to what the rest of the budget holds, from the steps and evaluations so far."""
        args, step = self.args, self.state["step"]
        per_step = (time.time() - self.started - sum(self.eval_seconds)) / max(1, step)
        per_eval = max(self.eval_seconds, default=30.0) * 1.5  # a checkpoint write may follow an evaluation
        left = args.time_budget - (time.time() - self.started)
        # steps s such that s * per_step + (s / eval_interval + snapshots + 2) * per_eval fits in 90% of what is left
        evaluations = len([s for s in self.snapshot_steps if step < s < args.steps]) + 2
        steps = int((0.9 * left - evaluations * per_eval) / (per_step + per_eval / args.eval_interval))
        args.steps = max(step + 1, step + steps)
        self.snapshot_steps = {s for s in self.snapshot_steps if s < args.steps} | {args.steps}
        self.record_schedule_segment()
        write(f"--time-budget: {per_step * 1e3:.1f} ms per step, {per_eval:.1f} s per evaluation: {args.steps} steps")

    def run(self) -> int:
        from tqdm import tqdm

        args = self.args
        bar = tqdm(
            total=args.steps, initial=self.state["step"], disable=args.no_progress, dynamic_ncols=True, unit="step"
        )
        write = log if args.no_progress else bar.write
        window = {"tokens": 0, "start": time.time()}  # tokens/s over the last few seconds, for the bar

        def after_step(step: int, loss: float) -> None:
            self.state["tokens_seen"] += self.tokens_per_step
            window["tokens"] += self.tokens_per_step
            self.loss_ema = loss if self.loss_ema is None else 0.95 * self.loss_ema + 0.05 * loss
            bar.update(1)
            elapsed = time.time() - window["start"]
            if elapsed > 2:
                bar.set_postfix(loss=f"{self.loss_ema:.3f}", tok_s=f"{window['tokens'] / elapsed:,.0f}")
                window.update(tokens=0, start=time.time())
            if step % args.eval_interval == 0 or step in self.snapshot_steps or step == args.steps:
                self.record_evaluation(step, write)
            if step % args.checkpoint_interval == 0 or step == args.steps:
                save_training_state(self.checkpoint_dir, self.model, self.optimizer, self.batcher, self.state)
                self.write_model(final=step == args.steps)

        task = LanguageModelTask(self.batcher, dropout=args.dropout)

        def lr_at(step: int) -> float:  # reads args.steps when called: --time-budget sets it after 100 steps
            return learning_rate(step, peak=args.lr, warmup=args.warmup, total=args.steps, floor=0.1, decay_delay=1)

        def train_until(total_steps: int) -> None:
            train_loop(
                self.model,
                self.optimizer,
                task,
                state=self.state,
                total_steps=total_steps,
                lr_at=lr_at,
                after_step=after_step,
            )

        if args.time_budget > 0 and self.state["step"] < 100:
            train_until(min(100, args.steps))  # inside the warmup, where the cosine's length does not matter
            self.fit_steps_to_budget(write)
            bar.total = args.steps
        train_until(args.steps)
        bar.close()
        if self.state["step"] >= args.steps and not (self.model_dir / "config.json").is_file():
            self.write_model(final=True)
        final = json.loads((self.model_dir / "config.json").read_text(encoding="utf-8"))["meta"]
        log(
            f"done: {final['training']['steps']} steps, {final['training']['tokens_seen']:,} tokens, "
            f"{final['training']['train_seconds']:.0f} s, val loss {final['val_loss']:.3f}; model in {self.model_dir}"
        )
        return 0


def main(args: argparse.Namespace) -> int:
    """The `train` command on parsed arguments (see add_arguments)."""
    return LanguageModelRun(args).run()


if __name__ == "__main__":
    _parser = argparse.ArgumentParser(prog="python -m training.train", description=__doc__.split("\n")[0])
    add_arguments(_parser)
    sys.exit(main(_parser.parse_args()))
