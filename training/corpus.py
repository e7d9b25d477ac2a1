"""The text corpus: read, clean, split, tokenize, and the fixed validation sample.

- every *.txt under the corpus path(s), Project Gutenberg headers/footers stripped, sorted into
  English and Chinese (by their share of CJK characters); the last 5% of each file (cut at a
  line break) is held out for validation;
- a byte-level BPE (`tokenizers`) trained on the mix, Chinese repeated so it gets its share of merges;
- the validation sample: evenly spaced windows per language, and the mean next-token loss on them.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from model.tokenizer import HubTokenizer
from model.transformer import Transformer

BOS = "<|endoftext|>"
VAL_FRACTION = 0.05
VAL_WINDOWS = {"en": 48, "zh": 24}  # fixed validation sample: evenly spaced windows per language


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
    """Byte-level BPE on the training split; Chinese repeated `zh_repeat` times so it gets merges
    (0: English only, as the v2 tokenizer's English part)."""
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


@torch.no_grad()
def token_losses(
    model: Transformer, tokenizer: HubTokenizer, docs: list[str], n_ctx: int, bos_id: int, batch: int = 32
) -> tuple[np.ndarray, np.ndarray]:
    """Every token of `docs` and the model's loss on it in nats: the text cut into rows of
    BOS + (n_ctx - 1) tokens, every token predicted once.  -> (ids [tokens], nats [tokens])"""
    was_training = model.training
    model.eval()
    ids = encode_docs(tokenizer, docs, bos_id)
    ids = ids[ids != bos_id]
    width = n_ctx - 1
    rows = [np.concatenate([[bos_id], ids[s : s + width]]) for s in range(0, len(ids), width)]
    nats: list[torch.Tensor] = []
    for i in range(0, len(rows), batch):
        chunk = rows[i : i + batch]
        longest = max(len(r) for r in chunk)
        x = torch.full((len(chunk), longest), -100, dtype=torch.long)
        for j, r in enumerate(chunk):
            x[j, : len(r)] = torch.as_tensor(r)
        logits = model(x[:, :-1].clamp(min=0).to(model.device))  # [batch, pos, d_vocab]
        targets = x[:, 1:].to(model.device)
        loss = F.cross_entropy(logits.transpose(1, 2).float(), targets, ignore_index=-100, reduction="none")
        nats.append(loss[targets != -100].cpu())  # row by row: the text's order
    model.train(was_training)
    return ids, torch.cat(nats).double().numpy() if nats else np.zeros(0)


def bits_per_character(
    model: Transformer, tokenizer: HubTokenizer, corpus: Corpus, n_ctx: int, bos_id: int, batch: int = 32
) -> dict[str, float]:
    """Held-out bits per character, per language: the total loss in bits over the whole held-out
    split (token_losses) divided by the number of characters of the held-out text."""
    out: dict[str, float] = {}
    for lang, docs in corpus.val.items():
        if docs:
            _, nats = token_losses(model, tokenizer, docs, n_ctx, bos_id, batch)
            out[lang] = float(nats.sum()) / math.log(2) / sum(len(d) for d in docs)
    return out


FREQUENCY_BANDS = ((0, 3), (3, 30), (30, 300), (300, None))  # occurrences in the training split


def character_counts(corpus: Corpus, lang: str) -> Counter[str]:
    """How often each character occurs in the training split of one language."""
    return Counter(char for doc in corpus.train.get(lang, []) for char in doc)


def bits_by_training_frequency(
    model: Transformer, tokenizer: HubTokenizer, corpus: Corpus, lang: str, n_ctx: int, bos_id: int
) -> list[dict[str, Any]]:
    """Where the held-out bits go: the tokens that are one CJK character, grouped by how often that
    character occurs in the training split, then every other token (punctuation, spaces, bytes)."""
    counts = character_counts(corpus, lang)
    ids, nats = token_losses(model, tokenizer, corpus.val[lang], n_ctx, bos_id)
    texts = [tokenizer.tokenizer.decode([int(i)]) for i in ids]
    bands: list[dict[str, Any]] = [{"seen": f"{lo}-{hi or ''}", "tokens": 0, "bits": 0.0} for lo, hi in FREQUENCY_BANDS]
    other: dict[str, Any] = {"seen": "not one CJK character", "tokens": 0, "bits": 0.0}
    for text, loss in zip(texts, nats / math.log(2), strict=True):
        band = other
        if len(text) == 1 and _CJK.fullmatch(text):
            seen = counts.get(text, 0)
            band = next(b for b, (lo, hi) in zip(bands, FREQUENCY_BANDS, strict=True) if hi is None or seen < hi)
        band["tokens"] += 1
        band["bits"] += float(loss)
    total = float(nats.sum()) / math.log(2)
    for band in [*bands, other]:
        band["bits_per_token"] = band["bits"] / max(1, band["tokens"])
        band["share_of_bits"] = band["bits"] / total
        band["share_of_tokens"] = band["tokens"] / max(1, len(ids))
    return [*bands, other]


_SENTENCE_END = {
    "en": re.compile(r"(?<!Mr\.)(?<!Mrs\.)(?<!Dr\.)(?<!St\.)(?<=[.!?])\s+"),
    "zh": re.compile(r"(?<=[。！？])"),
}


def held_out_sentences(corpus: Corpus, lang: str, n: int = 24, min_chars: int = 12, max_chars: int = 90) -> list[str]:
    """n sentences of the held-out split, evenly spread over it: the natural-text induction probe
    (each is typed twice, analysis.heads.natural_head_scores)."""
    text = " ".join(" ".join(doc.split()) for doc in corpus.val.get(lang, []))
    pieces = [p.strip().strip("“”\"'") for p in _SENTENCE_END[lang].split(text)]
    sentences = [p for p in pieces if min_chars <= len(p) <= max_chars and "_" not in p]
    if len(sentences) <= n:
        return sentences
    return [sentences[int(i)] for i in np.linspace(0, len(sentences) - 1, n)]
