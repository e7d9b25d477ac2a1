"""A classical yardstick for the language models: a character n-gram with interpolated Kneser-Ney.

What can a model that only counts the last n-1 characters do on the same held-out split? It
puts the transformer's bits per character in context: where the transformer is far below it,
it has learned more than local statistics; where the two are level, the text to learn from
has run out (Chinese here: 255 k training characters).

    p(c | h) = max(N(h c) - D, 0) / N(h) + D · F(h) / N(h) · p(c | h')

with h' the context h without its first character, N the count of an n-gram in training
(at the top order) or its continuation count (the number of distinct characters seen before
it, at the lower orders), F(h) the number of distinct characters seen after h, D = 0.75,
and a uniform distribution over the characters of both splits below the lowest order (a
closed vocabulary, which favours the baseline: the transformer pays for unseen characters
with byte tokens).

    python -m training.ngram ../shared/corpus --order 3 5
"""

from __future__ import annotations

import argparse
import math
from collections import Counter
from pathlib import Path

from training.corpus import load_corpus

DISCOUNT = 0.75


class KneserNey:
    def __init__(self, text: str, order: int, alphabet: set[str], discount: float = DISCOUNT) -> None:
        self.order, self.discount, self.alphabet_size = order, discount, len(alphabet)
        top = Counter(text[i : i + order] for i in range(len(text) - order + 1))
        # counts[n]: the top order's n-gram counts, or continuation counts below it
        self.counts: list[Counter[str]] = [Counter() for _ in range(order + 1)]
        self.counts[order] = top
        for n in range(order - 1, 0, -1):
            for gram in self.counts[n + 1]:
                self.counts[n][gram[1:]] += 1
        self.context_total: list[Counter[str]] = [Counter() for _ in range(order + 1)]  # N(h)
        self.followers: list[Counter[str]] = [Counter() for _ in range(order + 1)]  # F(h)
        for n in range(1, order + 1):
            for gram, count in self.counts[n].items():
                self.context_total[n][gram[:-1]] += count
                self.followers[n][gram[:-1]] += 1

    def probability(self, context: str, char: str) -> float:
        """p(char | the last order-1 characters of context)."""
        p = 1.0 / self.alphabet_size
        for n in range(1, min(self.order, len(context) + 1) + 1):  # lowest order first
            history = context[len(context) - (n - 1) :] if n > 1 else ""
            total = self.context_total[n].get(history, 0)
            if total:
                seen = max(self.counts[n].get(history + char, 0) - self.discount, 0.0)
                p = seen / total + self.discount * self.followers[n][history] / total * p
        return p

    def bits_per_character(self, text: str) -> float:
        bits = 0.0
        for i, char in enumerate(text):
            bits -= math.log2(self.probability(text[max(0, i - self.order + 1) : i], char))
        return bits / max(1, len(text))


def held_out_bits(corpus_paths: list[Path], order: int) -> dict[str, float]:
    """Held-out bits per character per language (training.corpus's split: each file's last 5 %)."""
    corpus = load_corpus(corpus_paths)
    out = {}
    for lang in ("en", "zh"):
        if not corpus.train[lang]:
            continue
        train, held_out = "\n".join(corpus.train[lang]), "\n".join(corpus.val[lang])
        model = KneserNey(train, order, set(train) | set(held_out))
        out[lang] = model.bits_per_character(held_out)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, nargs="+")
    parser.add_argument("--order", type=int, nargs="+", default=[3, 5])
    args = parser.parse_args()
    for order in args.order:
        figures = held_out_bits(args.corpus, order)
        print(f"{order}-gram, interpolated Kneser-Ney: "
              + ", ".join(f"{lang} {bits:.3f} bits/char" for lang, bits in figures.items()))


if __name__ == "__main__":
    main()
