"""The measure that decides whether a teacher's model is offered first for Chinese sentences."""

from __future__ import annotations

from typing import Any

from checkpoints import LoadedModel
from checkpoints.chinese_coverage import HAN, SENTENCE, WHOLE_SHARE, mark_chinese_capable, whole_character_share
from model.config import TransformerConfig
from model.tokenizer import CharTokenizer
from model.transformer import Transformer

HAN_CHARS = "".join(dict.fromkeys(char for char in SENTENCE if HAN.match(char)))


def loaded_with(tokenizer: CharTokenizer, meta: dict[str, Any]) -> LoadedModel:
    cfg = TransformerConfig(d_model=8, n_layers=1, n_heads=1, vocab_size=tokenizer.vocab_size, n_ctx=8)
    return LoadedModel(Transformer(cfg), tokenizer, meta)


def test_share_counts_characters_that_are_whole_tokens() -> None:
    assert whole_character_share(CharTokenizer(HAN_CHARS)) == 1.0
    assert whole_character_share(CharTokenizer("")) == 0.0  # bytes only: three tokens a character
    half = HAN_CHARS[: len(HAN_CHARS) // 2]
    expected = sum(char in half for char in SENTENCE) / sum(1 for char in SENTENCE if HAN.match(char))
    assert abs(whole_character_share(CharTokenizer(half)) - expected) < 1e-9
    assert whole_character_share(CharTokenizer(HAN_CHARS), "only English here") == 0.0


def test_marking_keeps_the_languages_already_listed() -> None:
    reads = loaded_with(CharTokenizer(HAN_CHARS), {"first_for": ["en"]})
    mark_chinese_capable(reads)
    assert reads.meta["first_for"] == ["en", "zh"] and reads.meta["zh_whole_characters"] == 1.0
    bytes_only = loaded_with(CharTokenizer(""), {})
    mark_chinese_capable(bytes_only)
    assert "first_for" not in bytes_only.meta and bytes_only.meta["zh_whole_characters"] < WHOLE_SHARE
