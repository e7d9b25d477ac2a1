"""tiny-translator's task: numbers in digits -> English words or Chinese numerals.

    "en:2026"  -> "two thousand twenty-six"
    "zh:2026"  -> "二千零二十六"
    "en:15"    -> "fifteen"          (the words come in another order than the digits: 1-5 -> fif-teen)
    "zh:40300" -> "四万零三百"

The task is small enough to learn in minutes on a CPU, and its cross-attention shows
alignment: each output word looks at the digit(s) it spells out, including the reorderings
(teens) and the insertions (thousand / 千 / 万, 零 for skipped zeros).

`python -m model.translate_task train --out runs/tiny-translator` trains the shipped model;
`translate(model, tokenizer, "2026", "zh")` decodes greedily.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from model.config import TransformerConfig
from model.tokenizer import CharTokenizer
from model.transformer import Transformer

MAX_NUMBER = 99_999  # numbers 0 .. MAX_NUMBER
BOS, EOS, PAD = "<s>", "</s>", "<pad>"
LANGUAGES = ("en", "zh")
ZH_DIGITS = "零一二三四五六七八九"
ALPHABET = "0123456789:" + "abcdefghijklmnopqrstuvwxyz -" + ZH_DIGITS + "十百千万"
TASK_DESCRIPTION = (
    "Source: a task marker and a number in digits, 'en:2026' or 'zh:2026' (0 to 99,999). Target: the number "
    "in English words ('two thousand twenty-six', no 'and', hyphenated tens) or in Chinese numerals "
    "('二千零二十六': 二 not 两, 十 alone for 10-19, 零 for skipped zeros). Greedy decoding, one character per step."
)

_ONES = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def english(n: int) -> str:
    """0 <= n < 1e6 in English words: 2026 -> 'two thousand twenty-six'."""
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else "-" + _ONES[n % 10])
    if n < 1000:
        rest = n % 100
        return _ONES[n // 100] + " hundred" + ("" if rest == 0 else " " + english(rest))
    rest = n % 1000
    return english(n // 1000) + " thousand" + ("" if rest == 0 else " " + english(rest))


def chinese(n: int) -> str:
    """0 <= n < 1e8 in Chinese numerals: 2026 -> '二千零二十六', 10 -> '十', 40300 -> '四万零三百'."""
    if n == 0:
        return "零"

    def below_10000(m: int, leading: bool) -> str:
        out, zero_pending = "", False
        for value, unit in ((1000, "千"), (100, "百"), (10, "十"), (1, "")):
            digit = m // value % 10
            if digit == 0:
                if out:
                    zero_pending = True
                continue
            if zero_pending:
                out += "零"
                zero_pending = False
            if unit == "十" and digit == 1 and not out and leading:
                out += "十"  # 10-19 at the very start: 十, 十五 (not 一十)
            else:
                out += ZH_DIGITS[digit] + unit
        return out

    high, low = divmod(n, 10000)
    if high == 0:
        return below_10000(low, leading=True)
    text = below_10000(high, leading=True) + "万"
    if low:
        text += ("零" if low < 1000 else "") + below_10000(low, leading=False)
    return text


def target_text(n: int, lang: str) -> str:
    return english(n) if lang == "en" else chinese(n)


def source_text(n: int, lang: str) -> str:
    return f"{lang}:{n}"


def sample_number(rng: random.Random) -> int:
    """Digit count uniform in 1..5, then a uniform number with that many digits (small numbers get their share)."""
    digits = rng.randint(1, len(str(MAX_NUMBER)))
    low = 0 if digits == 1 else 10 ** (digits - 1)
    return rng.randint(low, min(MAX_NUMBER, 10**digits - 1))


def make_tokenizer() -> CharTokenizer:
    return CharTokenizer(ALPHABET, (BOS, EOS, PAD))


def encode_pairs(tokenizer: CharTokenizer, pairs: list[tuple[int, str]]) -> dict[str, torch.Tensor]:
    """Batch tensors: src, src_mask, tgt_in (<s> + target), tgt_out (target + </s>, pad = -100), tgt_mask."""
    bos, eos, pad = (tokenizer.token_id(s) for s in (BOS, EOS, PAD))
    src = [[t.id for t in tokenizer.encode(source_text(n, lang))] for n, lang in pairs]
    tgt = [[t.id for t in tokenizer.encode(target_text(n, lang))] for n, lang in pairs]
    s_len = max(map(len, src))
    t_len = max(map(len, tgt)) + 1
    out = {
        "src": torch.full((len(pairs), s_len), pad),
        "src_mask": torch.zeros(len(pairs), s_len, dtype=torch.bool),
        "tgt_in": torch.full((len(pairs), t_len), pad),
        "tgt_out": torch.full((len(pairs), t_len), -100),
        "tgt_mask": torch.zeros(len(pairs), t_len, dtype=torch.bool),
    }
    for i, (s, t) in enumerate(zip(src, tgt, strict=True)):
        out["src"][i, : len(s)] = torch.tensor(s)
        out["src_mask"][i, : len(s)] = True
        out["tgt_in"][i, : len(t) + 1] = torch.tensor([bos] + t)
        out["tgt_out"][i, : len(t) + 1] = torch.tensor(t + [eos])
        out["tgt_mask"][i, : len(t) + 1] = True
    return out


@torch.no_grad()
def translate_batch(model: Transformer, tokenizer: CharTokenizer, sources: list[str], max_len: int = 64) -> list[str]:
    """Greedy decoding of full source strings ('en:2026'), batched."""
    bos, eos, pad = (tokenizer.token_id(s) for s in (BOS, EOS, PAD))
    model.eval()
    src_ids = [[t.id for t in tokenizer.encode(s)] for s in sources]
    s_len = max(map(len, src_ids))
    src = torch.full((len(sources), s_len), pad, device=model.device)
    src_mask = torch.zeros(len(sources), s_len, dtype=torch.bool, device=model.device)
    for i, ids in enumerate(src_ids):
        src[i, : len(ids)] = torch.tensor(ids)
        src_mask[i, : len(ids)] = True
    out = torch.full((len(sources), 1), bos, device=model.device)
    done = torch.zeros(len(sources), dtype=torch.bool, device=model.device)
    max_len = min(max_len, model.cfg.n_ctx - 1)
    for _ in range(max_len):
        logits = model(src, target_tokens=out, padding_mask=src_mask)
        nxt = logits[:, -1].argmax(-1)
        nxt = torch.where(done, torch.full_like(nxt, pad), nxt)
        out = torch.cat([out, nxt[:, None]], dim=1)
        done |= nxt == eos
        if bool(done.all()):
            break
    texts = []
    for row in out[:, 1:].tolist():
        ids = row[: row.index(eos)] if eos in row else row
        texts.append(tokenizer.decode([i for i in ids if i != pad]))
    return texts


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


def train(out: Path, steps: int, batch: int, lr: float, seed: int, threads: int, log_every: int = 250) -> int:
    from model.checkpoint import save_checkpoint
    from model.heads import head_scores

    if threads:
        torch.set_num_threads(threads)
    torch.manual_seed(seed)
    rng = random.Random(seed)
    tokenizer = make_tokenizer()
    cfg = TransformerConfig.from_dict(
        {**TRANSLATOR_CONFIG, "vocab_size": tokenizer.vocab_size, "pad_token_id": tokenizer.token_id(PAD), "seed": seed}
    )
    model = Transformer(cfg)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.98), weight_decay=0.01)
    warmup = 300
    started, seen = time.time(), 0
    history = []
    for step in range(1, steps + 1):
        frac = min(1.0, max(0.0, (step - warmup) / max(1, steps - warmup)))
        for g in optimizer.param_groups:
            g["lr"] = lr * min(1.0, step / warmup) * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * frac)))
        pairs = [(sample_number(rng), rng.choice(LANGUAGES)) for _ in range(batch)]
        b = encode_pairs(tokenizer, pairs)
        logits = model(
            b["src"], target_tokens=b["tgt_in"], padding_mask=b["src_mask"], target_padding_mask=b["tgt_mask"]
        )
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), b["tgt_out"].reshape(-1), ignore_index=-100)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        seen += batch
        if step % log_every == 0 or step == steps:
            em = exact_match(model, tokenizer, n=50, seed=999)
            model.train()
            history.append({"step": step, "loss": round(float(loss), 4), "exact_match": em["all"]})
            print(
                f"step {step}: loss {float(loss):.4f} exact match {em['all']:.3f} (en {em['en']:.2f} zh {em['zh']:.2f})"
                f" {time.time() - started:.0f} s",
                flush=True,
            )
    seconds = time.time() - started
    model.eval()
    shipped = Transformer(cfg)
    shipped.load_state_dict({k: v.half().float() for k, v in model.state_dict().items()})
    shipped.eval()
    em = exact_match(shipped, tokenizer, n=500, seed=2024)
    meta = {
        "name": "tiny-translator",
        "description": "tiny-translator: the original encoder-decoder Transformer (sinusoidal positions, Post-LN, "
        "ReLU, multi-head attention) trained to spell numbers in English words and Chinese numerals. "
        "原始编码器-解码器 Transformer：把阿拉伯数字写成英文单词或中文数字。",
        "task": TASK_DESCRIPTION,
        "examples": {
            s: translate_batch(shipped, tokenizer, [s])[0] for s in ("en:2026", "zh:2026", "en:15", "zh:40300")
        },
        "bos_token": BOS,
        "eos_token": EOS,
        "pad_token": PAD,
        "source_format": "en:<digits> or zh:<digits>",
        "training": {
            "steps": steps,
            "batch_size": batch,
            "examples_seen": seen,
            "train_seconds": round(seconds, 1),
            "lr": lr,
            "seed": seed,
            "device": "cpu",
            "threads": torch.get_num_threads(),
        },
        "exact_match": em["all"],
        "exact_match_detail": {k: v for k, v in em.items() if k != "errors"},
        "exact_match_errors": em["errors"],
        "parameters": model.parameter_counts(),
        "history": history,
    }
    heads = head_scores(shipped, token_range=(256, 256 + len(ALPHABET)), seq_len=20)
    meta["head_scores"] = heads
    save_checkpoint(out, model, tokenizer, meta, dtype=torch.float16)
    print(
        json.dumps(
            {k: meta[k] for k in ("exact_match", "exact_match_detail", "examples", "training")},
            ensure_ascii=False,
            indent=1,
        ),
        flush=True,
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m model.translate_task")
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="train tiny-translator")
    t.add_argument("--out", type=Path, default=Path("runs/tiny-translator"))
    t.add_argument("--steps", type=int, default=2500)
    t.add_argument("--batch-size", type=int, default=48)
    t.add_argument("--lr", type=float, default=1.5e-3)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--threads", type=int, default=1)
    d = sub.add_parser("translate", help="translate numbers with a trained model")
    d.add_argument("model_dir", type=Path)
    d.add_argument("numbers", nargs="+")
    d.add_argument("--lang", choices=LANGUAGES, default="en")
    args = parser.parse_args(argv)
    if args.command == "train":
        return train(args.out, args.steps, args.batch_size, args.lr, args.seed, args.threads)
    from model.checkpoint import load_checkpoint

    loaded = load_checkpoint(args.model_dir)
    for number in args.numbers:
        print(number, "->", translate(loaded.model, loaded.tokenizer, number, args.lang))  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    sys.exit(main())
