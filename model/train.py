"""Train a small decoder-only language model on an English + Chinese text corpus.

    python -m model.train ../shared/corpus --config tiny-gpt --steps 8000 --out runs/tiny-gpt

What it does:
- reads every *.txt under the corpus path(s), strips Project Gutenberg headers/footers, sorts
  files into English and Chinese (by their share of CJK characters), and holds out the last 5%
  of each file (cut at a line break) for validation;
- trains a byte-level BPE (`tokenizers`) on the mix, Chinese repeated so it gets its share of merges;
- samples training rows from English and Chinese with a fixed probability (Chinese upweighted:
  it is only ~10% of the characters), and mixes in two curricula that teach in-context copying:
  rows of random tokens repeated, and text rows where a span of the first half is copied later;
- AdamW with warmup + cosine decay, a tqdm bar with loss and tokens/s, validation loss and head
  scores every `--eval-interval` steps, fp16 snapshots at `--snapshot-steps`;
- checkpoints (weights, optimizer state, step, RNG states) as safetensors + JSON, never pickle;
  `--resume` continues from the last one;
- the usable model (config.json + model.safetensors + tokenizer.json, float16) is rewritten in
  OUT/model at every checkpoint, with its figures in the meta.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

from model.checkpoint import save_checkpoint
from model.config import TransformerConfig
from model.heads import best_heads, head_scores
from model.tokenizer import HubTokenizer
from model.transformer import Transformer

BOS = "<|endoftext|>"
VAL_FRACTION = 0.05
VAL_WINDOWS = {"en": 48, "zh": 24}  # fixed validation sample: evenly spaced windows per language

PRESETS: dict[str, dict[str, Any]] = {
    # the shipped default model: every modern choice a learner should see (RoPE, RMSNorm, SwiGLU, GQA)
    "tiny-gpt": dict(
        architecture="decoder",
        d_model=128,
        n_layers=3,
        n_heads=8,
        n_kv_heads=4,
        d_mlp=320,
        n_ctx=128,
        pos_encoding="rope",
        norm="rmsnorm",
        norm_placement="pre",
        activation="swiglu",
        bias=False,
        tied_embeddings=True,
    ),
    # seconds-long smoke tests
    "tiny-test": dict(
        architecture="decoder",
        d_model=32,
        n_layers=2,
        n_heads=4,
        n_kv_heads=2,
        d_mlp=64,
        n_ctx=64,
        pos_encoding="rope",
        norm="rmsnorm",
        norm_placement="pre",
        activation="swiglu",
        bias=False,
    ),
}

DESCRIPTION = (
    "tiny-gpt: a small decoder-only Transformer (RoPE, RMSNorm, SwiGLU, grouped-query attention) trained "
    "from scratch on public-domain English novels (Austen, Chesterton) and Chinese stories (鲁迅). "
    "一个从零训练的小型仅解码器 Transformer，训练语料为公有领域的英文小说与鲁迅的中文小说。"
)


# ---------------------------------------------------------------- corpus


def strip_gutenberg(text: str) -> str:
    """Drop a Project Gutenberg header (up to the `*** START OF` line) and footer (from `*** END OF`)."""
    lines = text.splitlines()
    start, end = 0, len(lines)
    for i, line in enumerate(lines):
        if line.startswith("*** START OF"):
            start = i + 1
            break
    for i in range(len(lines) - 1, start - 1, -1):
        if lines[i].startswith("*** END OF"):
            end = i
            break
    return "\n".join(lines[start:end]).strip() + "\n"


_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def language_of(text: str) -> str:
    sample = text[:20000]
    return "zh" if len(_CJK.findall(sample)) > 0.2 * max(1, len(sample)) else "en"


@dataclass
class Corpus:
    train: dict[str, list[str]]  # language -> documents
    val: dict[str, list[str]]
    files: list[dict[str, Any]]

    def split_summary(self) -> dict[str, Any]:
        chars = {
            part: {lang: sum(len(d) for d in docs) for lang, docs in getattr(self, part).items()}
            for part in ("train", "val")
        }
        return {
            "rule": f"the last {VAL_FRACTION:.0%} of each file (cut at a line break) is held out for validation",
            "chars": chars,
            "files": self.files,
        }


def find_text_files(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*.txt") if p.name.lower() != "readme.txt"))
        elif path.is_file():
            files.append(path)
        else:
            raise FileNotFoundError(f"corpus path {path} does not exist")
    if not files:
        raise FileNotFoundError(f"no .txt files under {', '.join(map(str, paths))}")
    return files


def load_corpus(paths: list[Path], max_chars: int | None = None) -> Corpus:
    """Read, clean and split the corpus. max_chars: keep only the start of each file (smoke tests)."""
    train: dict[str, list[str]] = {"en": [], "zh": []}
    val: dict[str, list[str]] = {"en": [], "zh": []}
    files = []
    for path in find_text_files(paths):
        text = strip_gutenberg(path.read_text(encoding="utf-8"))
        if max_chars is not None:
            text = text[:max_chars]
        lang = language_of(text)
        cut = text.rfind("\n", 0, int(len(text) * (1 - VAL_FRACTION)))
        cut = cut if cut > 0 else int(len(text) * (1 - VAL_FRACTION))
        train[lang].append(text[:cut])
        val[lang].append(text[cut:])
        files.append({"file": path.name, "language": lang, "train_chars": cut, "val_chars": len(text) - cut})
    return Corpus(train, val, files)


def train_bpe(corpus: Corpus, vocab_size: int, zh_repeat: int = 4) -> HubTokenizer:
    """Byte-level BPE on the training split; Chinese repeated `zh_repeat` times so it gets merges."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[BOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )

    def lines():
        for doc in corpus.train["en"]:
            yield from doc.split("\n")
        for _ in range(zh_repeat):
            for doc in corpus.train["zh"]:
                yield from doc.split("\n")

    tok.train_from_iterator(lines(), trainer)
    return HubTokenizer(tok, "bpe")


def encode_docs(tokenizer: HubTokenizer, docs: list[str], bos_id: int) -> np.ndarray:
    """All documents as one id stream, each document preceded by BOS."""
    out: list[int] = []
    for doc in docs:
        out.append(bos_id)
        lines = doc.split("\n")
        chunks = [
            "\n".join(lines[i : i + 200]) + ("\n" if i + 200 < len(lines) else "") for i in range(0, len(lines), 200)
        ]
        for enc in tokenizer.tokenizer.encode_batch(chunks, add_special_tokens=False):
            out.extend(enc.ids)
    return np.asarray(out, dtype=np.int64)


def validation_windows(
    tokenizer: HubTokenizer, corpus: Corpus, n_ctx: int, bos_id: int, windows: dict[str, int] | None = None
) -> dict[str, torch.Tensor]:
    """The fixed validation sample: per language, evenly spaced windows of BOS + (n_ctx - 1) tokens."""
    windows = windows or VAL_WINDOWS
    out = {}
    for lang, n in windows.items():
        if not corpus.val.get(lang):
            continue
        ids = encode_docs(tokenizer, corpus.val[lang], bos_id)
        width = n_ctx - 1
        n = max(1, min(n, len(ids) // width))
        starts = np.linspace(0, len(ids) - width, n).astype(np.int64)
        rows = [np.concatenate([[bos_id], ids[s : s + width]]) for s in starts]
        out[lang] = torch.tensor(np.stack(rows), dtype=torch.long)
    return out


@torch.no_grad()
def validation_loss(model: Transformer, windows: dict[str, torch.Tensor], batch: int = 32) -> dict[str, float]:
    """Mean next-token loss over the fixed validation sample: per language and over all tokens."""
    was_training = model.training
    model.eval()
    totals: dict[str, float] = {}
    total_loss, total_tokens = 0.0, 0
    for lang, rows in windows.items():
        lang_loss, lang_tokens = 0.0, 0
        for i in range(0, len(rows), batch):
            x = rows[i : i + batch].to(model.device)
            logits = model(x[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), x[:, 1:].reshape(-1), reduction="sum")
            lang_loss += float(loss)
            lang_tokens += x[:, 1:].numel()
        totals[lang] = lang_loss / lang_tokens
        total_loss += lang_loss
        total_tokens += lang_tokens
    totals["all"] = total_loss / max(1, total_tokens)
    model.train(was_training)
    return totals


# ---------------------------------------------------------------- batches


class Batcher:
    """Training rows: BOS + text, Chinese with probability zh_prob; some rows carry copying curricula."""

    def __init__(
        self,
        streams: dict[str, np.ndarray],
        n_ctx: int,
        batch: int,
        bos_id: int,
        vocab: int,
        zh_prob: float,
        repeat_frac: float,
        span_frac: float,
        seed: int,
    ) -> None:
        self.streams, self.n_ctx, self.batch, self.bos_id, self.vocab = streams, n_ctx, batch, bos_id, vocab
        self.zh_prob, self.repeat_frac, self.span_frac = zh_prob, repeat_frac, span_frac
        self.rng = np.random.default_rng(seed)

    def text_row(self) -> np.ndarray:
        lang = "zh" if (self.rng.random() < self.zh_prob and len(self.streams.get("zh", ())) > self.n_ctx) else "en"
        ids = self.streams[lang]
        start = int(self.rng.integers(0, len(ids) - self.n_ctx))
        return np.concatenate([[self.bos_id], ids[start : start + self.n_ctx - 1]])

    def next(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(inputs [batch, n_ctx - 1], targets [batch, n_ctx - 1]); target -100 is ignored."""
        rows, targets = [], []
        n = self.n_ctx
        for _ in range(self.batch):
            kind = self.rng.random()
            if kind < self.repeat_frac:
                # BOS + r r r ...: random tokens repeated; the first copy is unpredictable, so unscored
                length = int(self.rng.integers(8, n // 2))
                r = self.rng.integers(1, self.vocab, length)
                row = np.concatenate([[self.bos_id], np.tile(r, n // length + 1)])[:n]
                target = row[1:].copy()
                target[: length - 1] = -100  # predicting inside the first copy is pure guessing
            else:
                row = self.text_row()
                if kind < self.repeat_frac + self.span_frac:
                    # copy a span of the first half into the second half
                    half = n // 2
                    length = int(self.rng.integers(8, half // 2 + 1))
                    src = int(self.rng.integers(1, half - length + 1))
                    dst = int(self.rng.integers(half, n - length + 1))
                    row = row.copy()
                    row[dst : dst + length] = row[src : src + length]
                target = row[1:].copy()
            rows.append(row[:-1])
            targets.append(target)
        return torch.tensor(np.stack(rows), dtype=torch.long), torch.tensor(np.stack(targets), dtype=torch.long)


# ---------------------------------------------------------------- checkpoints (safetensors + JSON)


def save_training_state(
    directory: Path, model: Transformer, optimizer: torch.optim.Optimizer, batcher: Batcher, state: dict[str, Any]
) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    weights = {
        k: v.detach().cpu().contiguous()
        for k, v in model.state_dict().items()
        if k != "W_U.weight" or not model.cfg.tied_embeddings
    }
    save_file(weights, str(directory / "weights.safetensors.tmp"))
    opt_state = optimizer.state_dict()
    tensors: dict[str, torch.Tensor] = {}
    for index, param_state in opt_state["state"].items():
        for key, value in param_state.items():
            value = value if torch.is_tensor(value) else torch.tensor(value)
            tensors[f"{index}.{key}"] = value.detach().cpu().contiguous()
    tensors["torch_rng"] = torch.get_rng_state()
    save_file(tensors, str(directory / "optimizer.safetensors.tmp"))
    document = dict(state)
    document["param_groups"] = opt_state["param_groups"]
    document["data_rng"] = batcher.rng.bit_generator.state
    (directory / "state.json.tmp").write_text(json.dumps(document, indent=1), encoding="utf-8")
    for name in ("weights.safetensors", "optimizer.safetensors", "state.json"):
        (directory / f"{name}.tmp").replace(directory / name)


def load_training_state(
    directory: Path, model: Transformer, optimizer: torch.optim.Optimizer, batcher: Batcher
) -> dict[str, Any]:
    document = json.loads((directory / "state.json").read_text(encoding="utf-8"))
    model.load_state_dict(load_file(str(directory / "weights.safetensors")), strict=False)
    tensors = load_file(str(directory / "optimizer.safetensors"))
    torch.set_rng_state(tensors.pop("torch_rng"))
    per_param: dict[int, dict[str, torch.Tensor]] = {}
    for key, value in tensors.items():
        index, name = key.split(".", 1)
        per_param.setdefault(int(index), {})[name] = value
    optimizer.load_state_dict({"state": per_param, "param_groups": document.pop("param_groups")})
    batcher.rng.bit_generator.state = document.pop("data_rng")
    return document


def rounded_copy(model: Transformer, dtype: torch.dtype) -> Transformer:
    """The model as it will be shipped: weights rounded to dtype (and back to float32)."""
    shipped = copy.deepcopy(model)
    with torch.no_grad():
        for p in shipped.parameters():
            p.copy_(p.to(dtype).float())
    return shipped.eval()


# ---------------------------------------------------------------- command


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
    parser.add_argument("--context", type=int, default=None, help="tokens per row (default: the config's n_ctx)")
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--vocab-size", type=int, default=2048, help="BPE vocabulary size")
    parser.add_argument("--zh-prob", type=float, default=0.3, help="share of text rows drawn from Chinese")
    parser.add_argument("--repeat-frac", type=float, default=0.25, help="share of rows of repeated random tokens")
    parser.add_argument("--span-frac", type=float, default=0.25, help="share of text rows with a copied span")
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
    path = Path(spec)
    if path.suffix == ".json" or path.is_file():
        fields = json.loads(path.read_text(encoding="utf-8"))
        fields = fields.get("config", fields)
    elif spec in PRESETS:
        fields = dict(PRESETS[spec])
    else:
        raise SystemExit(f"--config {spec!r} is neither a JSON file nor a preset ({', '.join(PRESETS)})")
    fields["vocab_size"] = vocab_size
    if n_ctx is not None:
        fields["n_ctx"] = n_ctx
    fields["seed"] = seed
    if fields.get("architecture", "decoder") != "decoder":
        raise SystemExit("the train command trains decoder-only language models")
    return TransformerConfig.from_dict(fields)


def log(message: str) -> None:
    print(message, flush=True)


def main(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    if args.threads:
        torch.set_num_threads(args.threads)
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(args.seed)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    ckpt_dir, model_dir = out / "checkpoint", out / "model"
    resuming = args.resume and (ckpt_dir / "state.json").is_file()
    if args.resume and not resuming:
        log(f"--resume: no checkpoint in {ckpt_dir}, starting afresh")

    corpus = load_corpus(args.corpus, args.max_chars)
    if not corpus.train["en"] and not corpus.train["zh"]:
        raise SystemExit("the corpus is empty")
    started = time.time()
    if resuming and (out / "tokenizer.json").is_file():
        tokenizer = HubTokenizer.from_file(out / "tokenizer.json")
    else:
        tokenizer = train_bpe(corpus, args.vocab_size)
        tokenizer.save(out)
    bos = tokenizer.token_id(BOS)
    if bos is None:
        raise SystemExit(f"the tokenizer in {out} has no {BOS} token")
    bos_id: int = bos
    log(f"tokenizer: byte-level BPE, {tokenizer.vocab_size} tokens ({time.time() - started:.1f} s)")

    if resuming:
        saved = json.loads((ckpt_dir / "state.json").read_text(encoding="utf-8"))
        cfg = TransformerConfig.from_dict(saved["config"])
    else:
        cfg = resolve_config(args.config, tokenizer.vocab_size, args.context, args.seed)
    n_ctx = cfg.n_ctx if args.context is None else min(args.context, cfg.n_ctx)
    streams = {lang: encode_docs(tokenizer, docs, bos_id) for lang, docs in corpus.train.items() if docs}
    val_windows = validation_windows(tokenizer, corpus, n_ctx, bos_id)
    log("train tokens: " + ", ".join(f"{k} {len(v):,}" for k, v in streams.items()))

    model = Transformer(cfg).to(device)
    model.train()
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and "W_E" not in n]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2 or "W_E" in n]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}],
        lr=args.lr,
        betas=(0.9, 0.95),
    )
    batcher = Batcher(
        streams,
        n_ctx,
        args.batch_size,
        bos_id,
        tokenizer.vocab_size,
        args.zh_prob,
        args.repeat_frac,
        args.span_frac,
        args.seed,
    )
    state: dict[str, Any] = {"step": 0, "tokens_seen": 0, "train_seconds": 0.0, "history": [], "snapshots": []}
    if resuming:
        state = load_training_state(ckpt_dir, model, optimizer, batcher)
        log(f"resumed at step {state['step']} ({state['tokens_seen']:,} tokens seen)")
    state["config"] = cfg.to_dict()
    segment = {
        "from_step": state["step"],
        "repeat_frac": args.repeat_frac,
        "span_frac": args.span_frac,
        "zh_prob": args.zh_prob,
        "target_steps": args.steps,
        "lr": args.lr,
    }
    state["schedule"] = [s for s in state.get("schedule", []) if s["from_step"] < state["step"]] + [segment]
    snapshot_steps = {int(s) for s in str(args.snapshot_steps).split(",") if s.strip()} | {args.steps}
    n_params = sum(p.numel() for p in model.parameters())
    log(f"model: {n_params:,} parameters, context {n_ctx}, device {device}")

    def lr_at(step: int) -> float:
        if step < args.warmup:
            return args.lr * (step + 1) / args.warmup
        progress = min(1.0, (step - args.warmup) / max(1, args.steps - args.warmup))
        return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))

    def evaluate(m: Transformer) -> dict[str, Any]:
        losses = validation_loss(m, val_windows)
        heads = head_scores(m, bos_id=bos_id, token_range=(1, tokenizer.vocab_size))
        return {"val": losses, "heads": heads, "best": best_heads(heads)}

    def write_model(final: bool) -> dict[str, Any]:
        shipped = rounded_copy(model, torch.float16)
        result = evaluate(shipped)
        best = result["best"]
        meta = {
            "name": "tiny-gpt" if args.config == "tiny-gpt" else out.name,
            "description": DESCRIPTION
            if args.config == "tiny-gpt"
            else f"trained with `transformer-explorer train` ({args.config})",
            "language": ["en", "zh"],
            "bos_token": BOS,
            "eos_token": BOS,
            "corpus": corpus.split_summary(),
            "sampling": {
                "zh_prob": args.zh_prob,
                "repeat_frac": args.repeat_frac,
                "span_frac": args.span_frac,
                "schedule": state["schedule"],  # one entry per (re)start: mixes may change on --resume
                "note": "text rows are Chinese with probability zh_prob; repeat rows are random BPE tokens "
                "repeated (induction curriculum); span rows copy a span of the first half later",
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
                "optimizer": "AdamW(0.9, 0.95), weight decay 0.05, warmup + cosine to 10%",
            },
            "parameters": model.parameter_counts(),
            "val_loss": round(result["val"]["all"], 4),
            "val_loss_by_language": {k: round(v, 4) for k, v in result["val"].items() if k != "all"},
            "val_sample": {
                "windows": VAL_WINDOWS,
                "tokens_per_window": n_ctx,
                "how": "model.train.validation_windows on the held-out split, weights as shipped (float16)",
            },
            "head_scores": result["heads"],
            "best_heads": best,
            "snapshots": state["snapshots"],
            "history": state["history"][-200:],
        }
        save_checkpoint(model_dir, model, tokenizer, meta, dtype=torch.float16)
        return result

    tokens_per_step = args.batch_size * (n_ctx - 1)
    bar = tqdm(total=args.steps, initial=state["step"], disable=args.no_progress, dynamic_ncols=True, unit="step")
    window_tokens, window_start = 0, time.time()
    loss_ema = None
    while state["step"] < args.steps:
        step = state["step"]
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step)
        t0 = time.time()
        inputs, targets = batcher.next()
        inputs, targets = inputs.to(device), targets.to(device)
        with model.fused_attention():
            logits = model(inputs)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=-100)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        state["step"] = step = step + 1
        state["tokens_seen"] += tokens_per_step
        state["train_seconds"] += time.time() - t0
        window_tokens += tokens_per_step
        loss_value = float(loss.detach())
        loss_ema = loss_value if loss_ema is None else 0.95 * loss_ema + 0.05 * loss_value
        bar.update(1)
        elapsed = time.time() - window_start
        if elapsed > 2:
            bar.set_postfix(loss=f"{loss_ema:.3f}", tok_s=f"{window_tokens / elapsed:,.0f}")
            window_tokens, window_start = 0, time.time()

        is_snapshot = step in snapshot_steps
        if step % args.eval_interval == 0 or is_snapshot or step == args.steps:
            result = evaluate(model)
            best = result["best"]
            entry = {
                "step": step,
                "tokens_seen": state["tokens_seen"],
                "train_loss": round(loss_ema, 4),
                "val_loss": round(result["val"]["all"], 4),
                "val_en": round(result["val"].get("en", float("nan")), 4),
                "val_zh": round(result["val"].get("zh", float("nan")), 4),
                "prev_token": best["previous-token"],
                "induction": best["induction"],
            }
            state["history"].append(entry)
            msg = (
                f"step {step}: train {loss_ema:.3f} val {entry['val_loss']:.3f} (en {entry['val_en']:.3f}, "
                f"zh {entry['val_zh']:.3f}) prev-token {best['previous-token']['score']:.2f} "
                f"L{best['previous-token']['layer']}H{best['previous-token']['head']} induction "
                f"{best['induction']['score']:.2f} L{best['induction']['layer']}H{best['induction']['head']} "
                f"tok/s {state['tokens_seen'] / state['train_seconds']:,.0f}"
            )
            bar.write(msg) if not args.no_progress else log(msg)
            if is_snapshot:
                snap_dir = model_dir / "snapshots"
                snap_dir.mkdir(parents=True, exist_ok=True)
                rel = f"snapshots/step-{step:06d}.safetensors"
                weights = {
                    k: v.detach().to("cpu", torch.float16).contiguous()
                    for k, v in model.state_dict().items()
                    if k != "W_U.weight" or not cfg.tied_embeddings
                }
                save_file(weights, str(model_dir / rel))
                state["snapshots"] = [s for s in state["snapshots"] if s["step"] != step] + [
                    {
                        "step": step,
                        "file": rel,
                        "val_loss": entry["val_loss"],
                        "tokens_seen": state["tokens_seen"],
                        "best_heads": {k: best[k] for k in ("previous-token", "induction", "first-token")},
                    }
                ]
        if step % args.checkpoint_interval == 0 or step == args.steps:
            save_training_state(ckpt_dir, model, optimizer, batcher, state)
            write_model(final=step == args.steps)
    bar.close()
    if state["step"] >= args.steps and not (model_dir / "config.json").is_file():
        write_model(final=True)
    final = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))["meta"]
    log(
        f"done: {final['training']['steps']} steps, {final['training']['tokens_seen']:,} tokens, "
        f"{final['training']['train_seconds']:.0f} s, val loss {final['val_loss']:.3f}; model in {model_dir}"
    )
    return 0


def device_name(device: str) -> str:
    if device == "cuda" and torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    import platform

    return f"CPU ({platform.processor() or platform.machine()})"


if __name__ == "__main__":
    _parser = argparse.ArgumentParser(prog="python -m model.train", description=__doc__.split("\n")[0])
    add_arguments(_parser)
    sys.exit(main(_parser.parse_args()))
