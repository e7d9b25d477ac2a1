"""The tokenizer from GGUF metadata: llama.cpp's pre-tokenizer splits per `tokenizer.ggml.pre`, round trips,
SentencePiece against llama.cpp's SPM algorithm, and refusals."""

from __future__ import annotations

from typing import Any

import pytest

from checkpoints import CheckpointError
from checkpoints.gguf_tokenizer import GPT2_RE, GPT4O_RE, LLAMA3_RE, PRE_TOKENIZERS, QWEN2_RE, gguf_tokenizer
from tests.checkpoints.gguf_files import byte_level_vocab

regex = pytest.importorskip("regex")

ROUND_TRIP = [
    "The capital of France is Paris.",
    "我们今天去北京的天安门广场看升旗。",
    "emoji 😀👍🏽 and ZWJ 👨‍👩‍👧 done",
    "digits 3.14159 and 1,000,000 and 2026-12-01",
    "  leading, trailing  \n\n\tand\r\nmixed   whitespace   ",
    "I'm sure they'll say DON'T — it's 中文 mixed with English.",
]


def bpe_metadata(pre: str, **extra: Any) -> dict[str, Any]:
    tokens, merges, types = byte_level_vocab()
    return {"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": pre, "tokenizer.ggml.tokens": tokens,
            "tokenizer.ggml.merges": merges, "tokenizer.ggml.token_type": types,
            "tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2, **extra}


def pieces(pre: str, text: str) -> list[str]:
    """How the built tokenizer splits text before BPE, as spans of the original text."""
    tokenizer, _ = gguf_tokenizer(bpe_metadata(pre))
    return [text[start:end] for _, (start, end) in tokenizer.tokenizer.pre_tokenizer.pre_tokenize_str(text)]


def llama_cpp_split(regexes: tuple[str, ...], text: str) -> list[str]:
    """llama.cpp's unicode_regex_split, reimplemented: each regex splits every piece so far into its
    matches and the gaps between them."""
    parts = [text]
    for pattern in regexes:
        out = []
        for part in parts:
            last = 0
            for match in regex.finditer(pattern, part):
                if match.start() > last:
                    out.append(part[last:match.start()])
                if match.end() > match.start():
                    out.append(match.group())
                last = match.end()
            if last < len(part):
                out.append(part[last:])
        parts = out
    return parts


# pinned splits, read off llama.cpp's regexes (src/llama-vocab.cpp)
PINNED = {
    ("gpt-2", "digits 12345"): ["digits", " 12345"],
    ("smollm", "digits 12345"): ["digits", " ", "1", "2", "3", "4", "5"],
    ("qwen2", "digits 12345"): ["digits", " ", "1", "2", "3", "4", "5"],
    ("llama-bpe", "digits 12345"): ["digits", " ", "123", "45"],
    ("gpt-2", "I'm DON'T"): ["I", "'m", " DON", "'", "T"],
    ("qwen2", "I'm DON'T"): ["I", "'m", " DON", "'T"],
    ("llama-bpe", "I'm DON'T"): ["I", "'m", " DON", "'T"],
    ("gpt-2", "a   b"): ["a", "  ", " b"],
    ("qwen2", "a   b\n\n c"): ["a", "  ", " b", "\n\n", " c"],
    ("gpt-2", "你好，世界"): ["你好", "，", "世界"],
    ("qwen2", "你好，世界"): ["你好", "，世界"],
    ("smollm", "你好 世界2"): ["你好", " 世界", "2"],
}


@pytest.mark.parametrize(("pre", "text"), list(PINNED))
def test_pre_tokenizer_splits_as_llama_cpp(pre: str, text: str) -> None:
    expected = PINNED[(pre, text)]
    assert llama_cpp_split(PRE_TOKENIZERS[pre].regexes, text) == expected  # the pin is what the regexes say
    assert pieces(pre, text) == expected


@pytest.mark.parametrize("pre", ["gpt-2", "smollm", "qwen2", "llama-bpe", "dbrx"])
@pytest.mark.parametrize("text", ROUND_TRIP)
def test_splits_agree_with_the_regexes_and_round_trip(pre: str, text: str) -> None:
    assert pieces(pre, text) == llama_cpp_split(PRE_TOKENIZERS[pre].regexes, text)
    tokenizer, _ = gguf_tokenizer(bpe_metadata(pre))
    ids = [token.id for token in tokenizer.encode(text)]
    assert tokenizer.decode(ids) == text


def test_regex_table_holds_llama_cpp_strings() -> None:
    assert PRE_TOKENIZERS["smollm"].regexes == (r"\p{N}", GPT2_RE)
    assert PRE_TOKENIZERS["qwen2"].regexes == (QWEN2_RE,)
    assert PRE_TOKENIZERS["llama-bpe"].regexes == (LLAMA3_RE,) and PRE_TOKENIZERS["llama-bpe"].ignore_merges


def test_special_tokens_and_bos_meta() -> None:
    tokenizer, meta = gguf_tokenizer(bpe_metadata("qwen2", **{"tokenizer.ggml.add_bos_token": True}))
    assert meta["bos_token"] == "<|im_start|>" and meta["eos_token"] == "<|im_end|>" and meta["prepend_bos"]
    assert tokenizer.token_id("<|im_start|>") == 1  # one token where the chat template writes it (app/chat.py)
    tokens = tokenizer.encode("<|im_start|>the")
    assert 1 not in [t.id for t in tokens]  # typed by the learner it is text: llama.cpp's parse_special=false
    assert "".join(t.text for t in tokens) == "<|im_start|>the"
    _, meta = gguf_tokenizer(bpe_metadata("llama-bpe"))
    assert meta["prepend_bos"]  # llama.cpp's default for this pre-tokenizer when the file does not say
    _, meta = gguf_tokenizer(bpe_metadata("smollm"))
    assert not meta["prepend_bos"]


@pytest.mark.parametrize(("changes", "fragment"), [
    ({"tokenizer.ggml.pre": "tekken"}, "tokenizer.ggml.pre = 'tekken' is not implemented"),
    ({"tokenizer.ggml.pre": "default"}, "tokenizer.ggml.pre = 'default'"),
    ({"tokenizer.ggml.model": "bert"}, "tokenizer.ggml.model = 'bert' is not supported"),
    ({"tokenizer.ggml.model": "rwkv"}, "tokenizer.ggml.model = 'rwkv' is not supported"),
    ({"tokenizer.ggml.add_eos_token": True}, "add_eos_token"),
    ({"tokenizer.ggml.add_space_prefix": True}, "add_space_prefix = True on a byte-level BPE"),
    ({"tokenizer.ggml.brand_new": 1}, "tokenizer.ggml.brand_new"),
    ({"tokenizer.ggml.merges": ["nospace"]}, "not two tokens"),
    ({"tokenizer.ggml.bos_token_id": 99999}, "outside"),
])
def test_unsupported_tokenizers_are_refused(changes: dict[str, Any], fragment: str) -> None:
    with pytest.raises(CheckpointError, match=regex.escape(fragment)):
        gguf_tokenizer(bpe_metadata("qwen2") | changes)


# SentencePiece (tokenizer.ggml.model = "llama")

SPM_PIECES = {"▁": -1.0, "▁t": -2.0, "he": -3.0, "▁the": -4.0, "▁c": -5.0, "at": -6.0, "▁cat": -7.0, "e": -8.0,
              "t": -9.0, "h": -10.0, "c": -11.0, "a": -12.0, "s": -13.0, "▁s": -14.0, "at▁": -15.0, "▁▁": -16.0}


def spm_metadata() -> dict[str, Any]:
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + list(SPM_PIECES)
    scores = [0.0] * 259 + list(SPM_PIECES.values())
    types = [2, 3, 3] + [6] * 256 + [1] * len(SPM_PIECES)
    return {"tokenizer.ggml.model": "llama", "tokenizer.ggml.tokens": tokens, "tokenizer.ggml.scores": scores,
            "tokenizer.ggml.token_type": types, "tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2,
            "tokenizer.ggml.unknown_token_id": 0}


def llama_cpp_spm(metadata: dict[str, Any], text: str) -> list[int]:
    """llama.cpp's llm_tokenizer_spm, reimplemented: start from characters, merge the neighbouring pair whose
    concatenation is the highest-scoring token (leftmost on ties) until none is left, bytes for the rest."""
    tokens, scores = metadata["tokenizer.ggml.tokens"], metadata["tokenizer.ggml.scores"]
    ids = {t: i for i, t in enumerate(tokens)}
    symbols = list("▁" + text.replace(" ", "▁"))
    while True:
        best = None
        for i in range(len(symbols) - 1):
            joined = symbols[i] + symbols[i + 1]
            if joined in ids and (best is None or scores[ids[joined]] > scores[ids[best[1]]]):
                best = (i, joined)
        if best is None:
            break
        symbols[best[0]:best[0] + 2] = [best[1]]
    out: list[int] = []
    for symbol in symbols:
        out.extend([ids[symbol]] if symbol in ids else [ids[f"<0x{b:02X}>"] for b in symbol.encode("utf-8")])
    return out


@pytest.mark.parametrize("text", ["the cat", "the  cats sat", " the cat 世界 😀", "hello\nworld", "ttthhe"])
def test_sentencepiece_matches_llama_cpp_and_round_trips(text: str) -> None:
    metadata = spm_metadata()
    tokenizer, meta = gguf_tokenizer(metadata)
    ids = [t.id for t in tokenizer.encode(text)]
    assert ids == llama_cpp_spm(metadata, text)
    assert tokenizer.decode(ids) == text
    assert meta["prepend_bos"] and meta["bos_token"] == "<s>"  # llama.cpp adds BOS for SPM unless told not to


# GPT-4o's o200k split (Phi-4-mini's tokenizer.ggml.pre = "gpt-4o"). llama.cpp's own regex for it (src/llama-vocab.cpp,
# LLAMA_VOCAB_PRE_TYPE_GPT4O), written with ASCII case because its engine has no \p{Lu}; it splits ASCII text the same
_CONTRACTION = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?"
LLAMA_CPP_GPT4O = (r"[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+" + _CONTRACTION
                   + r"|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*" + _CONTRACTION
                   + r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")
GPT4O_PINNED = {
    "HelloWorld isn't XMLHttp": ["Hello", "World", " isn't", " XMLHttp"],
    "I'M HERE'S 12345": ["I'M", " HERE'S", " ", "123", "45"],
    "a/b.\n/c": ["a", "/b", ".\n/", "c"],
    "你好，世界": ["你好", "，世界"],
}


@pytest.mark.parametrize("text", list(GPT4O_PINNED))
def test_gpt4o_splits_as_its_pattern_says(text: str) -> None:
    assert llama_cpp_split(PRE_TOKENIZERS["gpt-4o"].regexes, text) == GPT4O_PINNED[text]
    assert pieces("gpt-4o", text) == GPT4O_PINNED[text]


@pytest.mark.parametrize("text", ROUND_TRIP + list(GPT4O_PINNED))
def test_gpt4o_equals_the_tokenizers_library_and_llama_cpp(text: str) -> None:
    """Against a tokenizer.json as Phi-4-mini ships it (Split on the o200k pattern, then ByteLevel), read by the
    tokenizers library itself, on a tiny vocabulary; and, on ASCII text, against llama.cpp's ASCII-case regex."""
    import json

    from tokenizers import Tokenizer

    tokens, merges, _ = byte_level_vocab()
    shipped = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": GPT4O_RE}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": {token: i for i, token in enumerate(tokens)}, "merges": merges},
    }
    reference = Tokenizer.from_str(json.dumps(shipped))
    ours, _ = gguf_tokenizer(bpe_metadata("gpt-4o"))
    assert [t.id for t in ours.encode(text)] == reference.encode(text, add_special_tokens=False).ids
    assert ours.decode([t.id for t in ours.encode(text)]) == text
    if text.isascii():
        assert pieces("gpt-4o", text) == llama_cpp_split((LLAMA_CPP_GPT4O,), text)
