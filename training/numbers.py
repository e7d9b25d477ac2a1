"""tiny-translator's task: numbers in digits -> English words or Chinese numerals.

    "en:2026"  -> "two thousand twenty-six"
    "zh:2026"  -> "二千零二十六"
    "en:15"    -> "fifteen"          (the words come in another order than the digits: 1-5 -> fif-teen)
    "zh:40300" -> "四万零三百"

The task is small enough to learn in minutes on a CPU, and its cross-attention shows
alignment: each output word looks at the digit(s) it spells out, including the reorderings
(teens) and the insertions (thousand / 千 / 万, 零 for skipped zeros).
`training.translate` trains and evaluates the model on it.
"""

from __future__ import annotations

import random

import torch
import torch.nn.functional as F

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


class NumberTranslationTask:
    """Random (number, language) pairs, teacher-forced: cross-entropy of the decoder's next character."""

    fused_attention = False  # the shipped tiny-translator was trained through the explicit attention path

    def __init__(self, tokenizer: CharTokenizer, batch_size: int, rng: random.Random) -> None:
        self.tokenizer, self.batch_size, self.rng = tokenizer, batch_size, rng

    def next_batch(self) -> dict[str, torch.Tensor]:
        pairs = [(sample_number(self.rng), self.rng.choice(LANGUAGES)) for _ in range(self.batch_size)]
        return encode_pairs(self.tokenizer, pairs)

    def loss(self, model: Transformer, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        b = {name: t.to(model.device) for name, t in batch.items()}
        logits = model(
            b["src"], target_tokens=b["tgt_in"], padding_mask=b["src_mask"], target_padding_mask=b["tgt_mask"]
        )  # [batch, target_pos, d_vocab]
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), b["tgt_out"].reshape(-1), ignore_index=-100)
