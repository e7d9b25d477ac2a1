"""The v2 tokenizer: an English byte-level BPE with whole Chinese characters.

One `tokenizers` byte-level BPE, so every string still encodes (byte fallback) and every token
keeps its character span:

- the English part is a BPE trained on the English training split only, sized so that common
  words stay whole (`whole_word_rate`);
- every non-ASCII character seen at least `min_count` times in the Chinese training split, and
  every character of the seeds' example sentences, is one token. Each is added as the merges
  of its UTF-8 bytes ((b1, b2), then (b1b2, b3)), ranked before every English merge, so a
  known character always becomes exactly one token and an unseen one stays as its bytes.

Because the byte-level pre-tokenizer puts a run of Chinese characters into one piece and no
merge joins two characters, "我爱北京天安门广场。" is ten tokens.
"""

from __future__ import annotations

import json
import re
from collections import Counter

from tokenizers import Tokenizer

from model.tokenizer import HubTokenizer, _bytes_to_unicode
from training.corpus import Corpus, character_counts, train_bpe

# The example sentences of the two seed texts (and the page's own), which must read as whole
# characters and (for English) as the corpus allows.
EXAMPLE_SENTENCES = (
    "我爱北京天安门广场。",
    "小明把书给了小红，因为她要复习",
    "这只猫没有过马路，因为它太累了",
    "我爱你",
    "狗咬人",
    "深度学习入门",
    "量子力学",
    "高速公路",
    "路面维护",
    "近视眼需要眼镜",
    "预测下一个词元",
    "自注意力让每个词元看见整句话",
    "The animal didn't cross the street because it was too tired.",
)

_BYTE_TO_CHAR = _bytes_to_unicode()
_ENGLISH_WORD = re.compile(r" ?[A-Za-z]+")


def byte_level(text: str) -> str:
    """The byte-level alphabet spelling of text (what the BPE's vocabulary stores)."""
    return "".join(_BYTE_TO_CHAR[b] for b in text.encode("utf-8"))


def chinese_characters(corpus: Corpus, min_count: int, extra: tuple[str, ...] = EXAMPLE_SENTENCES) -> list[str]:
    """Non-ASCII, non-space characters seen at least min_count times in the Chinese training split,
    then those of `extra`; most frequent first."""
    counts = character_counts(corpus, "zh")
    chars = [ch for ch, n in counts.most_common() if n >= min_count and ord(ch) > 127 and not ch.isspace()]
    seen = set(chars)
    for sentence in extra:
        for ch in sentence:
            if ord(ch) > 127 and not ch.isspace() and ch not in seen:
                chars.append(ch)
                seen.add(ch)
    return chars


def character_merges(chars: list[str]) -> list[tuple[str, str]]:
    """The byte merges that make each character one token: (b1, b2), (b1b2, b3), ... in order."""
    merges: dict[tuple[str, str], None] = {}
    for ch in chars:
        pieces = [_BYTE_TO_CHAR[b] for b in ch.encode("utf-8")]
        left = pieces[0]
        for right in pieces[1:]:
            merges[(left, right)] = None
            left += right
    return list(merges)


def build_tokenizer(corpus: Corpus, english_vocab: int = 6000, min_count: int = 3) -> HubTokenizer:
    """English BPE of `english_vocab` entries plus whole Chinese characters (see the module doc)."""
    english = train_bpe(corpus, english_vocab, zh_repeat=0)
    data = json.loads(english.tokenizer.to_str())
    vocab: dict[str, int] = data["model"]["vocab"]
    english_merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ", 1)) for m in data["model"]["merges"]]
    cjk = [ch for ch in chinese_characters(corpus, min_count) if byte_level(ch) not in vocab]
    cjk_merges = character_merges(cjk)
    for left, right in cjk_merges:
        vocab.setdefault(left + right, len(vocab))
    taken = set(cjk_merges)
    merges = cjk_merges + [m for m in english_merges if m not in taken]
    data["model"]["vocab"] = vocab
    data["model"]["merges"] = [list(m) for m in merges]
    return HubTokenizer(Tokenizer.from_str(json.dumps(data, ensure_ascii=False)), "bpe")


def frequent_english_words(corpus: Corpus, n: int = 1000) -> list[str]:
    """The n most frequent English words of the training split, as the pre-tokenizer sees them:
    with their leading space when they have one (" the", " Emma")."""
    counts: Counter[str] = Counter()
    for doc in corpus.train["en"]:
        counts.update(m.group(0) for m in _ENGLISH_WORD.finditer(doc) if m.group(0).startswith(" "))
    return [word for word, _ in counts.most_common(n)]


def whole_word_rate(tokenizer: HubTokenizer, words: list[str]) -> float:
    """Share of words that encode as one token."""
    whole = sum(1 for w in words if len(tokenizer.tokenizer.encode(w, add_special_tokens=False).ids) == 1)
    return whole / max(1, len(words))


def tokenizer_figures(tokenizer: HubTokenizer, corpus: Corpus) -> dict[str, object]:
    """What the v2 tokenizer does on this corpus, as recorded in a model's meta (tests re-measure it)."""
    words = frequent_english_words(corpus)
    seeds = {s: len(tokenizer.encode(s)) for s in EXAMPLE_SENTENCES if any(ord(c) > 127 for c in s)}
    per_token = {}
    for lang, docs in corpus.val.items():
        text = "".join(docs)
        if text:
            per_token[lang] = round(len(text) / max(1, len(tokenizer.tokenizer.encode(text).ids)), 4)
    return {
        "vocab_size": tokenizer.vocab_size,
        "english_whole_word_rate": round(whole_word_rate(tokenizer, words), 4),
        "english_words_checked": len(words),
        "example_sentence_tokens": seeds,
        "held_out_chars_per_token": per_token,
    }
