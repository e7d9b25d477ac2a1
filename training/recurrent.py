"""Train the recurrent language model (model/recurrent.py) on the corpus, beside the Transformers.

    python -m training.recurrent ../shared/corpus --out runs/recurrent --ship model/weights/recurrent-gru
    make recurrent                                      # the same command (about 10 minutes on one CPU thread)

It reads the same tokens as tiny-gpt and the pe-* family (their v2 tokenizer, copied from
model/weights/pe-rope) and trains on the same kind of rows as pe-rope: the `train` command's Batcher
with pe_family's settings (rows of 64 tokens, batch 32, the same copying curricula, Chinese with
probability 0.3, seed 0), the same AdamW and learning-rate schedule, for 500 steps (pe-rope: 1000;
a shared 2-core machine did 100 steps in about 2 minutes). So the lab compares the two on one
sentence with one tokenization; pe-rope has read twice as many training tokens.

A checkpoint is written every 100 steps (runs/recurrent/checkpoint); running the command again
resumes from it. --ship writes recurrent.safetensors (float32), recurrent.json (config, training
figures, loss curve, validation loss of it and of pe-rope on the same windows) and tokenizer.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

from checkpoints import load_checkpoint
from model.recurrent import RecurrentConfig, RecurrentLM
from model.tokenizer import HubTokenizer, load_tokenizer
from optimization.loop import train_loop
from training.checkpointing import load_training_state, save_training_state
from training.corpus import BOS, encode_docs, load_corpus, validation_loss, validation_windows
from training.language_modelling import Batcher
from training.pe_family import TRAIN_CONTEXT
from training.schedule import learning_rate

ROOT = Path(__file__).resolve().parents[1]
PAIRED = ROOT / "model" / "weights" / "pe-rope"  # the Transformer trained on the same rows; its tokenizer
CONTEXT, BATCH, LR, WARMUP, WEIGHT_DECAY = TRAIN_CONTEXT, 32, 3e-3, 100, 0.05
CURRICULA: dict[str, Any] = dict(repeat_frac=0.0, span_frac=0.1, echo_frac=0.2, echo_max_copies=2,
                                 zh_prob=0.3)  # pe_family's


class RecurrentTask:
    """Next-token prediction on Batcher rows, through the fused GRU."""

    fused_attention = False

    def __init__(self, batcher: Batcher) -> None:
        self.batcher = batcher

    @property
    def rng(self) -> Any:
        return self.batcher.rng

    def next_batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.batcher.next()

    def loss(self, model: RecurrentLM, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        inputs, targets = batch  # [batch, pos] each
        logits = model(inputs)  # [batch, pos, d_vocab]
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=-100)


def log(message: str) -> None:
    print(f"[recurrent {time.strftime('%H:%M:%S')}] {message}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.recurrent", description=__doc__.split("\n")[0])
    parser.add_argument("corpus", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=Path("runs/recurrent"))
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--d-hidden", type=int, default=256)
    parser.add_argument("--d-embed", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--eval-interval", type=int, default=100)
    parser.add_argument("--ship", type=Path, default=None, help="write the trained model into this folder")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    corpus = load_corpus(args.corpus)
    tokenizer = load_tokenizer(PAIRED)
    assert isinstance(tokenizer, HubTokenizer)
    bos_id = tokenizer.token_id(BOS)
    if bos_id is None:
        raise SystemExit(f"{PAIRED}/tokenizer.json has no {BOS} token")
    streams = {lang: encode_docs(tokenizer, docs, bos_id) for lang, docs in corpus.train.items() if docs}
    windows = validation_windows(tokenizer, corpus, CONTEXT, bos_id)
    batcher = Batcher(streams, CONTEXT, BATCH, bos_id, tokenizer.vocab_size, seed=args.seed, **CURRICULA)
    task = RecurrentTask(batcher)

    cfg = RecurrentConfig(vocab_size=tokenizer.vocab_size, d_embed=args.d_embed, d_hidden=args.d_hidden,
                          seed=args.seed)
    model = RecurrentLM(cfg)
    decayed = [p for name, p in model.named_parameters() if p.dim() >= 2 and name != "W_E"]
    kept = [p for name, p in model.named_parameters() if p.dim() < 2 or name == "W_E"]
    optimizer = torch.optim.AdamW([{"params": decayed, "weight_decay": WEIGHT_DECAY},
                                   {"params": kept, "weight_decay": 0.0}], lr=LR, betas=(0.9, 0.95))
    checkpoint = args.out / "checkpoint"
    state: dict[str, Any] = {"step": 0, "train_seconds": 0.0, "history": [], "recent": []}
    if (checkpoint / "state.json").is_file():
        state = load_training_state(checkpoint, model, optimizer, task)
        log(f"resumed at step {state['step']}")
    log(f"{model.parameter_count():,} parameters; {args.steps} steps of {BATCH} rows x {CONTEXT} tokens")

    def after_step(step: int, loss: float) -> None:
        state["recent"] = (state["recent"] + [loss])[-args.eval_interval:]
        if step % args.eval_interval == 0 or step == args.steps:
            val = validation_loss(model, windows)  # type: ignore[arg-type]  # the same windows, any LM
            row = {"step": step, "tokens_seen": step * BATCH * (CONTEXT - 1),
                   "train_loss": round(sum(state["recent"]) / len(state["recent"]), 4),
                   "val_loss": round(val["all"], 4), "val_en": round(val["en"], 4), "val_zh": round(val["zh"], 4),
                   "train_seconds": round(state["train_seconds"], 1)}
            state["history"].append(row)
            log(json.dumps(row))
        if step % 100 == 0 or step == args.steps:
            save_training_state(checkpoint, model, optimizer, task, state)

    train_loop(model, optimizer, task, state=state, total_steps=args.steps,
               lr_at=lambda step: learning_rate(step, peak=LR, warmup=WARMUP, total=args.steps, floor=0.1,
                                                decay_delay=1),
               after_step=after_step)

    paired = load_checkpoint(PAIRED).model.eval()
    paired_val = validation_loss(paired, windows)
    ours_val = validation_loss(model, windows)  # type: ignore[arg-type]
    meta = {
        "name": "recurrent-gru",
        "description": "A one-layer GRU language model trained on the same kind of rows as pe-rope, for "
                       f"{state['step']} steps (python -m training.recurrent); the lab's recurrence experiment runs "
                       "it step by step.",
        "tokenizer": "v2: the tokenizer of tiny-gpt and the pe-* family (copied from pe-rope)",
        "bos_token": BOS,
        "parameters": model.parameter_count(),
        "training": {"steps": state["step"], "batch_size": BATCH, "context": CONTEXT,
                     "tokens_seen": state["step"] * BATCH * (CONTEXT - 1), "lr": LR, "warmup": WARMUP,
                     "optimizer": f"AdamW(0.9, 0.95), weight decay {WEIGHT_DECAY}, warmup + cosine to 10%",
                     "curricula": CURRICULA, "seed": args.seed, "threads": args.threads, "device": "cpu",
                     "train_seconds": round(state["train_seconds"], 1)},
        "history": state["history"],
        "val_loss": {k: round(v, 4) for k, v in ours_val.items()},
        "paired_transformer": {"name": "pe-rope", "val_loss": {k: round(v, 4) for k, v in paired_val.items()},
                               "parameters": sum(p.numel() for p in paired.parameters())},
        "val_how": "the train command's fixed validation windows (the held-out last 5% of each file, rows of "
                   f"{CONTEXT} tokens), mean next-token loss in nats",
    }
    log(f"validation loss: GRU {meta['val_loss']}, pe-rope {meta['paired_transformer']['val_loss']}")
    if args.ship is not None:
        args.ship.mkdir(parents=True, exist_ok=True)
        weights = {name: t.detach().cpu().contiguous() for name, t in model.state_dict().items()}
        save_file(weights, str(args.ship / "recurrent.safetensors"))
        document = {"format": "recurrent-lm", "config": cfg.to_dict(), "meta": meta}
        (args.ship / "recurrent.json").write_text(json.dumps(document, ensure_ascii=False, indent=1), encoding="utf-8")
        shutil.copy(PAIRED / "tokenizer.json", args.ship / "tokenizer.json")
        log(f"shipped to {args.ship}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
