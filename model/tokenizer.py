"""Tokenizers that never fail: any Unicode string encodes, and every token knows where it came from.

Each token reports its id, a display text and the character span [start, end) of the
input it covers. Tokens that hold only part of a character (byte fallback) share that
character's span and show their byte, e.g. `<0xE6>`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer as HFTokenizer

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class Token:
    id: int
    text: str  # what the explorer shows for this token
    start: int  # character span of the input, [start, end)
    end: int

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "start": self.start, "end": self.end}


class CharTokenizer:
    """One id per known character; unknown characters fall back to their UTF-8 bytes.

    Ids 0..255 are the bytes, then the character vocabulary, then special tokens.
    With an empty character list this is a pure byte tokenizer (vocab 256).
    """

    kind = "char"

    def __init__(self, chars: str = "", specials: tuple[str, ...] = ()) -> None:
        self.chars = "".join(dict.fromkeys(chars))  # unique, order kept
        self.char_to_id = {c: 256 + i for i, c in enumerate(self.chars)}
        self.specials = tuple(specials)
        self.special_to_id = {s: 256 + len(self.chars) + i for i, s in enumerate(self.specials)}
        self.vocab_size = 256 + len(self.chars) + len(self.specials)

    def encode(self, text: str) -> list[Token]:
        tokens: list[Token] = []
        for index, char in enumerate(text):
            token_id = self.char_to_id.get(char)
            if token_id is not None:
                tokens.append(Token(token_id, char, index, index + 1))
                continue
            raw = char.encode("utf-8", errors="surrogatepass")  # lone surrogates still encode
            if len(raw) == 1 and char.isprintable():
                tokens.append(Token(raw[0], char, index, index + 1))
            else:
                tokens.extend(Token(b, f"<0x{b:02X}>", index, index + 1) for b in raw)
        return tokens

    def id_to_text(self, token_id: int) -> str:
        if token_id < 256:
            return chr(token_id) if chr(token_id).isprintable() and token_id < 128 else f"<0x{token_id:02X}>"
        if token_id < 256 + len(self.chars):
            return self.chars[token_id - 256]
        return self.specials[token_id - 256 - len(self.chars)]

    def decode(self, ids: list[int]) -> str:
        out = bytearray()
        for token_id in ids:
            if token_id < 256:
                out.append(token_id)
            elif token_id < 256 + len(self.chars):
                out.extend(self.chars[token_id - 256].encode("utf-8"))
        return out.decode("utf-8", errors="replace")

    def token_id(self, special: str) -> int:
        return self.special_to_id[special]

    def save(self, directory: Path) -> None:
        data = {"kind": self.kind, "chars": self.chars, "specials": list(self.specials)}
        (directory / "tokenizer.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


class HubTokenizer:
    """A `tokenizers` library tokenizer (byte-level BPE, WordPiece, ...) with spans for every token.

    Byte-level BPE covers every string by construction. WordPiece models may map
    characters to `[UNK]` or drop control characters: that is their real behaviour and
    the explorer shows it as it is.
    """

    def __init__(self, tokenizer: HFTokenizer, kind: str = "bpe") -> None:
        # Saved tokenizers may pad every input to a fixed length or cut it short (MiniLM's
        # pads to 128): the explorer shows exactly the tokens of the text, limits are the API's.
        tokenizer.no_padding()
        tokenizer.no_truncation()
        # The learner's text is text: a typed "<|im_end|>" or "[SEP]" is encoded as the characters it is made of,
        # never as the control token (only a chat template writes those, app/chat.py).
        tokenizer.encode_special_tokens = True
        self.tokenizer = tokenizer
        self.kind = kind
        self.vocab_size = tokenizer.get_vocab_size(with_added_tokens=True)
        self._byte_level = "ByteLevel" in tokenizer.to_str()[:100000]
        self._unk = getattr(tokenizer.model, "unk_token", None)  # WordPiece: "[UNK]"
        # id -> its text decoded alone: asked for every token of every text (a call into the library each,
        # ~10 us), the same answer each time, at most one entry per id of the vocabulary
        self._decoded_alone: dict[int, str] = {}

    @classmethod
    def from_file(cls, path: Path, kind: str = "bpe") -> HubTokenizer:
        return cls(HFTokenizer.from_file(str(path)), kind)

    def encode(self, text: str) -> list[Token]:
        # The Rust library takes valid Unicode only: a lone surrogate becomes U+FFFD (one
        # character for one, so every span still points at the caller's text).
        text = _LONE_SURROGATE.sub("\ufffd", text)
        encoding = self.tokenizer.encode(text)
        tokens = []
        for token_id, piece, (start, end) in zip(encoding.ids, encoding.tokens, encoding.offsets, strict=True):
            shown = text[start:end] if end > start else piece
            if self._unk and piece == self._unk:
                shown = piece  # an unknown character: show [UNK], what the model really sees
            if self._byte_level and end > start and self._decode_alone(token_id) != shown:
                shown = byte_level_text(piece)
            tokens.append(Token(int(token_id), shown, int(start), int(end)))
        return tokens

    def _decode_alone(self, token_id: int) -> str:
        text = self._decoded_alone.get(token_id)
        if text is None:
            text = self._decoded_alone[token_id] = self.tokenizer.decode([token_id])
        return text

    def id_to_text(self, token_id: int) -> str:
        piece = self.tokenizer.id_to_token(token_id)
        if piece is None:
            return f"<{token_id}>"
        if self._byte_level:
            return byte_level_text(piece)
        return piece

    def decode(self, ids: list[int]) -> str:
        # special tokens stay in the text (<|im_end|>, [SEP]): they are tokens the model read or wrote
        return self.tokenizer.decode(ids, skip_special_tokens=False)

    def token_id(self, special: str) -> int | None:
        return self.tokenizer.token_to_id(special)

    def save(self, directory: Path) -> None:
        self.tokenizer.save(str(directory / "tokenizer.json"))


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's printable stand-in character for each byte (ByteLevel pre-tokenizer alphabet)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    printable += list(range(ord("®"), ord("ÿ") + 1))
    chars = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return dict(zip(printable, (chr(c) for c in chars), strict=True))


_BYTE_DECODER = {c: b for b, c in _bytes_to_unicode().items()}


def byte_level_text(piece: str) -> str:
    """A byte-level BPE piece as a person reads it: its UTF-8 text, with bytes that are only
    part of a character shown as <0xE5> (a Chinese character often spans two tokens)."""
    raw = bytes(_BYTE_DECODER.get(c, 0x3F) for c in piece)
    text = raw.decode("utf-8", errors="surrogateescape")  # undecodable bytes -> U+DC80..U+DCFF
    return "".join(f"<0x{ord(c) - 0xDC00:02X}>" if 0xDC80 <= ord(c) <= 0xDCFF else c for c in text)


def load_tokenizer(directory: Path) -> CharTokenizer | HubTokenizer:
    """Load the tokenizer saved beside a checkpoint (`tokenizer.json`)."""
    path = directory / "tokenizer.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("kind") == "char":
        return CharTokenizer(data["chars"], tuple(data.get("specials", ())))
    model_type = data.get("model", {}).get("type", "BPE")
    return HubTokenizer.from_file(path, kind="wordpiece" if model_type == "WordPiece" else "bpe")
