"""Whether a model's tokenizer reads Chinese: measured, not guessed from its name or architecture.

A tokenizer built for Chinese (Qwen's) gives each common character a token of its own or puts it inside a
token of whole characters; an English one (SmolLM2's: 4 of this sentence's 32 characters whole) cuts most
characters into two or three byte tokens, which the model then has to put back together. The measure: of the Han
characters of one everyday sentence, the share that lie in exactly one token whose text is exactly whole
characters of the sentence. A byte piece, a SentencePiece byte fallback (<0xE6>) or an [UNK] never counts.

The pre-tokenizer name (`tokenizer.ggml.pre = qwen2`) is not used: the tiny test files use it with a
vocabulary of bytes only, and other families (Llama 3, Gemma) cover Chinese under their own names.
"""

from __future__ import annotations

import re
from typing import Any

from checkpoints import LoadedModel

# everyday words, 32 Han characters: a tokenizer that knows Chinese has them all
SENTENCE = "今天天气很好，我们一起去公园散步，然后在湖边看书、喝茶，聊聊学校里的事情。"
# the share of them that must be whole tokens for the model to be offered first for Chinese sentences
WHOLE_SHARE = 0.9
HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")  # CJK ideographs: extension A, unified, compatibility


def whole_character_share(tokenizer: Any, text: str = SENTENCE) -> float:
    """The share of `text`'s Han characters that lie in exactly one token, a token whose text is its span."""
    tokens = tokenizer.encode(text)
    covering = [0] * len(text)
    whole = [False] * len(text)
    for token in tokens:
        for index in range(token.start, token.end):
            covering[index] += 1
            whole[index] = token.text == text[token.start:token.end]
    han = [index for index, char in enumerate(text) if HAN.match(char)]
    if not han:
        return 0.0
    return sum(1 for index in han if covering[index] == 1 and whole[index]) / len(han)


def mark_chinese_capable(loaded: LoadedModel) -> None:
    """Write the measured share into the model's meta (`zh_whole_characters`); at WHOLE_SHARE or above, the
    model is listed first in the page's model menu for Chinese sentences (meta `first_for` gains "zh")."""
    share = whole_character_share(loaded.tokenizer)
    loaded.meta["zh_whole_characters"] = round(share, 3)
    if share >= WHOLE_SHARE:
        listed = loaded.meta.get("first_for")
        first_for = [str(lang) for lang in listed] if isinstance(listed, list) else []
        loaded.meta["first_for"] = first_for if "zh" in first_for else [*first_for, "zh"]
