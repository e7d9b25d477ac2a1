"""Text -> the tokens a model sees, within the server's limits.

Decoders get the start token their meta names (`bos_token`) before the text;
encoder-decoder models get it before the decoder input, never before the source.
Any Unicode string is valid input, lone surrogates included. With `chat`, a decoder reads the text
as one user message in its chat template (app.chat), special tokens as tokens.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app import chat, errors
from app.schemas import TextInput
from app.settings import Settings
from checkpoints import LoadedModel
from model.tokenizer import Token


@dataclass(frozen=True)
class Inputs:
    """A request's tokens; `target_tokens` is the decoder input of an encoder-decoder model, else None."""

    tokens: list[Token]
    target_tokens: list[Token] | None = None
    chat_text: str | None = None  # with `chat`: the rendered template the tokens' spans point into

    def key(self) -> tuple[Any, ...]:
        """Tokens, not text: a short key, and two texts that tokenize the same share a trace. Plain tuples of each
        token's fields hash in C; tuples of Tokens called a Python __hash__ per token on each of a trace's ~5
        dictionary lookups."""
        return _fields(self.tokens), None if self.target_tokens is None else _fields(self.target_tokens)


def _fields(tokens: list[Token]) -> tuple[tuple[int, str, int, int], ...]:
    return tuple((t.id, t.text, t.start, t.end) for t in tokens)


def check_lengths(request: TextInput, settings: Settings) -> None:
    """The checks that need no model: run before a model is loaded or built."""
    check_chars(request.text, "text", settings)
    if request.target_text is not None and len(request.target_text) > settings.max_chars:
        raise errors.text_too_long("target_text", settings.max_chars, len(request.target_text))


def encode(loaded: LoadedModel, request: TextInput, settings: Settings) -> Inputs:
    """The request's tokens (and decoder tokens for encoder-decoder models), within the token limits.

    The request has passed check_lengths (its characters) already: the service checks them once, first."""
    limit = min(settings.max_tokens, loaded.model.cfg.n_ctx)
    chat_text = None
    if request.chat:
        tokens, chat_text = encode_chat(loaded, request.text)
    else:
        tokens = encode_text(loaded, request.text)
    if not tokens:
        raise errors.no_tokens()
    if len(tokens) > limit:  # with chat, the count is of what the template wrote around the text
        raise errors.too_many_tokens("text as the chat template writes it" if request.chat else "text", len(tokens),
                                     limit)
    if loaded.model.cfg.architecture != "encoder-decoder":
        return Inputs(tokens, chat_text=chat_text)  # target_text means nothing to a single-stack model
    target_tokens = encode_text(loaded, request.target_text or "", as_target=True)
    if not target_tokens:
        raise errors.no_start_token()
    if len(target_tokens) > limit:
        raise errors.too_many_tokens("target_text", len(target_tokens), limit)
    return Inputs(tokens, target_tokens)


def check_chars(text: str, field: str, settings: Settings) -> None:
    if text == "":
        raise errors.empty_text(field)
    if len(text) > settings.max_chars:
        raise errors.text_too_long(field, settings.max_chars, len(text))


def encode_text(loaded: LoadedModel, text: str, *, as_target: bool = False) -> list[Token]:
    """Tokens for text, with the start token the model was trained with."""
    tokens = loaded.tokenizer.encode(text) if text else []
    architecture = loaded.model.cfg.architecture
    wants_bos = as_target if architecture == "encoder-decoder" else architecture == "decoder"
    bos = special_token(loaded, "bos_token") if wants_bos and loaded.meta.get("prepend_bos", True) else None
    return ([bos] if bos is not None else []) + tokens


def encode_chat(loaded: LoadedModel, text: str) -> tuple[list[Token], str]:
    """The tokens of `text` as one user message in the model's chat template, and the rendered text."""
    template = loaded.meta.get("chat_template")
    name = loaded.meta.get("name") or "this model"
    if loaded.model.cfg.architecture != "decoder":
        raise errors.invalid_option("chat", f"{name} is not a decoder: chat templates are for models that write a "
                                            "reply. Send the text without `chat`.")
    if not isinstance(template, str) or not template.strip():
        raise errors.invalid_option("chat", f"{name} has no chat template (its checkpoint names no "
                                            "tokenizer.chat_template). Send the text without `chat`.")
    names = {key: loaded.meta.get(key) if isinstance(loaded.meta.get(key), str) else "" for key in ("bos_token",
                                                                                                   "eos_token")}
    try:
        pieces = chat.pieces(template, text, names, lambda piece: special_id(loaded, piece) is not None)
    except chat.ChatTemplateError as error:
        raise errors.invalid_option("chat", f"{name}: {error}") from error
    tokens: list[Token] = []
    at = 0
    for piece in pieces:
        if piece.special:
            tokens.append(Token(int(special_id(loaded, piece.text) or 0), piece.text, at, at + len(piece.text)))
        else:
            tokens += [Token(t.id, t.text, t.start + at, t.end + at) for t in loaded.tokenizer.encode(piece.text)]
        at += len(piece.text)
    bos = special_token(loaded, "bos_token") if loaded.meta.get("prepend_bos", True) else None
    if bos is not None and not (tokens and tokens[0].id == bos.id):  # a template that writes {{ bos_token }} has it
        tokens.insert(0, bos)
    return tokens, "".join(piece.text for piece in pieces)


def special_id(loaded: LoadedModel, text: str) -> int | None:
    """The id of a token written as `text` (a special token's name), or None when the vocabulary has none."""
    try:
        token_id = loaded.tokenizer.token_id(text)
    except (KeyError, ValueError):
        return None
    return None if token_id is None else int(token_id)


def special_token(loaded: LoadedModel, key: str) -> Token | None:
    """The `bos_token` / `eos_token` named in the checkpoint meta, as a token with an empty span."""
    text = loaded.meta.get(key)
    if not isinstance(text, str):
        return None
    try:
        token_id = loaded.tokenizer.token_id(text)
    except KeyError:
        return None
    return None if token_id is None else Token(int(token_id), text, 0, 0)


def one_token(loaded: LoadedModel, field: str, text: str, *, before: str | None = None) -> int:
    """The id of `text` typed as exactly one token of this model (a target, an answer), else a 422 that shows its
    pieces. `before`: the text the token follows; when it ends in no whitespace, the next word's token starts with
    a space, so a word typed without it ("Paris" where the model's token is " Paris") is refused with the spaced
    token as the suggestion, never silently taken as the other token."""
    pieces = loaded.tokenizer.encode(text)
    if len(pieces) != 1:
        raise errors.not_one_token(field, text, [{"text": t.text, "start": t.start, "end": t.end} for t in pieces])
    follows_word = before is not None and before != "" and not before[-1].isspace()
    if follows_word and text[:1].isalnum():
        spaced = loaded.tokenizer.encode(" " + text)
        if len(spaced) == 1 and spaced[0].id != pieces[0].id:
            raise errors.missing_space(field, text, " " + text)
    return pieces[0].id


def token_text(loaded: LoadedModel, token_id: int) -> str:
    """How to show a token id; ids past the tokenizer's vocabulary (padded embedding rows) show as <id>."""
    try:
        return loaded.tokenizer.id_to_text(token_id)
    except (IndexError, KeyError, ValueError):
        return f"<{token_id}>"


def vocab_token(loaded: LoadedModel, token_id: int, **numbers: Any) -> dict[str, Any]:
    """A token of the vocabulary as an answer gives it (app.schemas.VocabToken): its id, its text, and the numbers
    the answer adds (a probability, a logit, ...)."""
    return {"id": int(token_id), "text": token_text(loaded, token_id), **numbers}


def tokens_out(tokens: list[Token] | None) -> list[dict[str, Any]] | None:
    return None if tokens is None else [t.to_dict() for t in tokens]


_BYTE = re.compile(r"<0x([0-9A-Fa-f]{2})>")


def _shown_bytes(text: str) -> bytes:
    """The UTF-8 bytes a token's shown text stands for: its characters, and <0xE5> as the byte it names."""
    out = bytearray()
    at = 0
    for found in _BYTE.finditer(text):
        out += text[at:found.start()].encode("utf-8", errors="surrogatepass")
        out.append(int(found.group(1), 16))
        at = found.end()
    return bytes(out + text[at:].encode("utf-8", errors="surrogatepass"))


def _character_length(stream: bytes, at: int) -> int:
    """Bytes of the character starting at stream[at]: its lead byte's length, fewer when the continuation bytes
    stop (a character the stream never finishes, or no UTF-8: each lone byte is a character of its own)."""
    lead = stream[at]
    need = 2 if 0xC2 <= lead <= 0xDF else 3 if 0xE0 <= lead <= 0xEF else 4 if 0xF0 <= lead <= 0xF4 else 1
    n = 1
    while n < need and at + n < len(stream) and 0x80 <= stream[at + n] <= 0xBF:
        n += 1
    return n


def written_tokens(loaded: LoadedModel, ids: Sequence[int]) -> list[dict[str, Any]]:
    """Ids a model wrote, as tokens whose spans count the characters of the text they write together.

    Byte tokens that spell one character (a Chinese character split by a byte-level BPE) share its span, as the
    tokenizer's own do, so the page names the character they spell (static/js/shared/dom.js, tokenTexts)."""
    texts = [token_text(loaded, i) for i in ids]
    pieces = [_shown_bytes(text) for text in texts]
    stream = b"".join(pieces)
    owner: list[int] = []  # [byte] the character it belongs to
    at = 0
    while at < len(stream):
        n = _character_length(stream, at)
        owner += [owner[-1] + 1 if owner else 0] * n
        at += n
    tokens, at = [], 0
    for token_id, text, piece in zip(ids, texts, pieces, strict=True):
        start = owner[at] if at < len(owner) else (owner[-1] + 1 if owner else 0)
        end = owner[at + len(piece) - 1] + 1 if piece else start
        tokens.append({"id": int(token_id), "text": text, "start": start, "end": end})
        at += len(piece)
    return tokens
