"""Tokenizers never fail, and every token knows its text and span."""

from __future__ import annotations

from pathlib import Path

import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from model.tokenizer import CharTokenizer, HubTokenizer, load_tokenizer

HOSTILE = [
    "我爱北京天安门广场。",
    "The animal didn't cross the street because it was too tired",
    "emoji 😀👩‍👩‍👧 flags 🇨🇳",
    "RTL \u202eevil\u202c مرحبا שלום",
    "control \x00\x07\x1b[31m tab\tnewline\n",
    "lone surrogate \ud800 end",
    "<img src=x onerror=alert(1)> $\\href{javascript:alert(1)}{x}$",
    " ",
    "e\u0301 combining",
]


@pytest.fixture(scope="module")
def bpe() -> HubTokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tok.train_from_iterator(["hello world, the street was tired. 我爱北京天安门广场。北京北京"] * 20, trainer)
    return HubTokenizer(tok)


@pytest.mark.parametrize("text", HOSTILE)
def test_char_tokenizer_covers_any_text(text: str) -> None:
    tok = CharTokenizer("abcdefghijklmnopqrstuvwxyz 我爱北京")
    tokens = tok.encode(text)
    assert tokens
    covered = sorted({(t.start, t.end) for t in tokens})
    assert covered == [(i, i + 1) for i in range(len(text))]  # every character, in order, once
    assert all(0 <= t.id < tok.vocab_size for t in tokens)
    if "\ud800" not in text:
        assert tok.decode([t.id for t in tokens]) == text


@pytest.mark.parametrize("text", HOSTILE)
def test_bpe_tokenizer_covers_any_text(bpe: HubTokenizer, text: str) -> None:
    safe = text.replace("\ud800", "\ufffd")  # what the tokenizer shows for a lone surrogate
    tokens = bpe.encode(text)
    assert tokens
    assert all(0 <= t.start <= t.end <= len(safe) for t in tokens)
    assert bpe.decode([t.id for t in tokens]) == safe
    for t in tokens:
        assert t.text  # something to show, even for a token holding part of a character


def test_bpe_spans_point_at_the_text(bpe: HubTokenizer) -> None:
    text = "hello 北京"
    tokens = bpe.encode(text)
    assert "".join(t.text for t in tokens if text[t.start : t.end] == t.text) == text


def test_chinese_char_split_into_bytes_shows_bytes() -> None:
    tokens = CharTokenizer("").encode("我")
    assert [t.text for t in tokens] == ["<0xE6>", "<0x88>", "<0x91>"]
    assert all((t.start, t.end) == (0, 1) for t in tokens)


def test_tokenizers_round_trip_through_files(tmp_path: Path, bpe: HubTokenizer) -> None:
    char = CharTokenizer("ab中", specials=("<s>",))
    char.save(tmp_path)
    again = load_tokenizer(tmp_path)
    assert isinstance(again, CharTokenizer) and again.encode("ab中x") == char.encode("ab中x")
    assert again.token_id("<s>") == char.token_id("<s>")
    bpe.save(tmp_path)
    assert load_tokenizer(tmp_path).encode("北京 hello") == bpe.encode("北京 hello")


def test_saved_padding_and_truncation_are_ignored(tmp_path: Path, bpe: HubTokenizer) -> None:
    """A tokenizer.json saved with padding on (MiniLM's pads to 128) still gives the text's own tokens."""
    bpe.tokenizer.enable_padding(length=64)
    bpe.tokenizer.enable_truncation(max_length=3)
    bpe.save(tmp_path)
    tokens = load_tokenizer(tmp_path).encode("hello world")
    assert 3 < len(tokens) < 64


def test_byte_level_pieces_of_a_character_show_their_bytes() -> None:
    """Byte-level BPE splits rare characters into byte tokens: show <0xE5>, never GPT-2's byte alphabet."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(["abc"], trainers.BpeTrainer(vocab_size=260, show_progress=False,
                                                         initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    shown = [t.text for t in HubTokenizer(tok).encode("a复")]
    assert shown == ["a", "<0xE5>", "<0xA4>", "<0x8D>"]


def test_decode_keeps_special_tokens() -> None:
    # a generated <|end|> is a token the model wrote: the decoded text shows it rather than dropping it
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<|end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(["hello world"] * 10, trainer)
    hub = HubTokenizer(tok)
    end = hub.token_id("<|end|>")
    assert end is not None
    ids = [t.id for t in hub.encode("hello")] + [end]
    assert hub.decode(ids) == "hello<|end|>"
