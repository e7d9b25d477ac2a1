"""Where a word is among a text's tokens: the positions a reader means by "it", "animal" or 猫.

Read by the head probes (analysis/heads.py: the coreference sentences) and by the lessons (lessons/view.py: a
claim's query and key), so a probe and a chapter find a word the same way.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from model.tokenizer import Token


class NotInText(ValueError):
    """A word that does not appear in the text (as often as asked), or that no token covers."""


def covering(tokens: Sequence[Token], text: str, word: str, occurrence: int = 1) -> list[int]:
    """Positions of the tokens that cover the `occurrence`-th appearance of `word` in `text`."""
    # a word ("it", not the "it" inside "with"); a single character (猫, 2, t) wherever it stands
    edge = r"\b" if word.isascii() and word.isalpha() and len(word) > 1 else ""
    found = list(re.finditer(edge + re.escape(word) + edge, text))
    if len(found) < occurrence:
        raise NotInText(f"{word!r} does not appear {occurrence} time(s) in {text!r}")
    start, end = found[occurrence - 1].span()
    positions = [i for i, t in enumerate(tokens) if t.end > t.start and t.start < end and t.end > start]
    if not positions:
        raise NotInText(f"no token covers {word!r}")
    return positions


def characters(tokens: Sequence[Token]) -> list[list[int]]:
    """Token positions grouped by the character span they spell, in order: the byte tokens of one character
    (SmolLM2's three for 猫) form one group; a token that spells no text (a start token) stands alone."""
    groups: dict[tuple[int, int], list[int]] = {}
    for i, t in enumerate(tokens):
        groups.setdefault((t.start, t.end) if t.end > t.start else (-1 - i, -1 - i), []).append(i)
    return list(groups.values())
