"""The tokenizer a GGUF file carries in its metadata, rebuilt with the `tokenizers` library.

- `tokenizer.ggml.model = "gpt2"`: byte-level BPE (tokens + merges). Its pre-tokenizer is chosen by
  `tokenizer.ggml.pre` and splits text the way llama.cpp does for that value: llama.cpp applies each regex
  of the list below in turn (src/llama-vocab.cpp, llm_tokenizer_bpe), every match and every gap between
  matches becoming a piece; here that is a Sequence of Split(regex, "isolated") before ByteLevel.
- `tokenizer.ggml.model = "llama"`: SentencePiece BPE (tokens + scores, byte fallback <0xXX>), as llama.cpp's
  SPM tokenizer: the highest-scoring pair of neighbours merges first, written here as BPE merges ranked by
  the score of what they make.
Anything else is refused, naming the value. Start/end tokens go into the meta (`bos_token`, `prepend_bos`),
which is how the explorer adds them (app.tokenizing).
"""

from __future__ import annotations

from typing import Any

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

from checkpoints.base import CheckpointError
from checkpoints.families import PRE_SPLITS
from model.tokenizer import HubTokenizer

# llama.cpp's regexes (src/llama-vocab.cpp), by the pre-tokenizer they belong to
GPT2_RE = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
CONTRACTIONS = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
LLAMA3_RE = CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
QWEN2_RE = CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
# GPT-4o's o200k split (Phi-4-mini, Llama 4): a word is an upper-case run then a lower-case run (or the other way
# round), with its contraction; digits in threes; punctuation takes a following "/" or line break. This is the
# tokenizer.json pattern that llama.cpp quotes for LLAMA_VOCAB_PRE_TYPE_GPT4O; llama.cpp's own regex engine has no
# \p{Lu}/\p{Ll}, so it runs an equivalent written with ASCII case ([^a-z], [^A-Z]), which splits the same on ASCII.
_UPPER, _LOWER = r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]", r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"
_O200K_CONTRACTION = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
GPT4O_RE = (rf"[^\r\n\p{{L}}\p{{N}}]?{_UPPER}*{_LOWER}+{_O200K_CONTRACTION}"
            rf"|[^\r\n\p{{L}}\p{{N}}]?{_UPPER}+{_LOWER}*{_O200K_CONTRACTION}"
            r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")


class PreTokenizer:
    """One llama.cpp pre-tokenizer type: its regexes, whether a whole word in the vocabulary skips the merges
    (llama.cpp's ignore_merges), and whether BOS is added when the file does not say (add_bos)."""

    def __init__(self, regexes: tuple[str, ...], ignore_merges: bool = False, add_bos: bool = False) -> None:
        self.regexes = regexes
        self.ignore_merges = ignore_merges
        self.add_bos = add_bos


# the splits by name; which `tokenizer.ggml.pre` value means which, as llama.cpp maps them (llama_vocab::impl::load),
# is each family's record (checkpoints/families/)
SPLITS: dict[str, PreTokenizer] = {
    "gpt2": PreTokenizer((GPT2_RE,)),
    "digits_gpt2": PreTokenizer((r"\p{N}", GPT2_RE)),
    "qwen2": PreTokenizer((QWEN2_RE,)),
    "llama3": PreTokenizer((LLAMA3_RE,), ignore_merges=True, add_bos=True),
    "llama3_regex": PreTokenizer((LLAMA3_RE,)),
    "gpt4o": PreTokenizer((GPT4O_RE,)),
}
PRE_TOKENIZERS: dict[str, PreTokenizer] = {pre: SPLITS[split] for pre, split in PRE_SPLITS.items()}

# the merges a SentencePiece vocabulary is cut into, bounded: SmolLM2's 49,152 tokens, cut this way, make 107,441
# merges of 758,312 characters (measured); 32 M is forty times that, five times that for a 262,144-token vocabulary
MAX_MERGE_CHARS = 1 << 25

# token types (gguf.TokenType)
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6

# tokenizer keys read here, and those that do not change how text becomes tokens
READ_KEYS = frozenset({
    "tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens", "tokenizer.ggml.token_type",
    "tokenizer.ggml.merges", "tokenizer.ggml.scores", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
    "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token",
    "tokenizer.ggml.add_space_prefix", "tokenizer.ggml.remove_extra_whitespaces", "tokenizer.chat_template",
})
INFORMATIVE_KEYS = frozenset({
    "tokenizer.ggml.padding_token_id", "tokenizer.ggml.seperator_token_id", "tokenizer.ggml.mask_token_id",
    "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id", "tokenizer.ggml.token_type_count",
    "tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.fim_suf_token_id", "tokenizer.ggml.fim_mid_token_id",
    "tokenizer.ggml.fim_pad_token_id", "tokenizer.ggml.fim_rep_token_id", "tokenizer.ggml.fim_sep_token_id",
    "tokenizer.ggml.prefix_token_id", "tokenizer.ggml.suffix_token_id", "tokenizer.ggml.middle_token_id",
    "tokenizer.ggml.add_sep_token", "tokenizer.huggingface.json", "tokenizer.chat_templates",
})


def gguf_tokenizer(metadata: dict[str, Any]) -> tuple[HubTokenizer, dict[str, Any]]:
    """The file's tokenizer and what the explorer must know about it (meta: bos/eos tokens, chat template)."""
    for key, value in metadata.items():
        if key.startswith("tokenizer.ggml.") and key not in READ_KEYS | INFORMATIVE_KEYS:
            raise CheckpointError(f"tokenizer key {key} = {value!r} is not implemented")
    if metadata.get("tokenizer.ggml.add_eos_token"):
        raise CheckpointError("tokenizer.ggml.add_eos_token = True (an end token after every text) is not implemented")
    if metadata.get("tokenizer.ggml.add_sep_token"):
        raise CheckpointError("tokenizer.ggml.add_sep_token = True is not implemented")
    kind = metadata.get("tokenizer.ggml.model")
    tokens = metadata.get("tokenizer.ggml.tokens")
    if not tokens:
        raise CheckpointError("the file has no tokenizer.ggml.tokens: no tokenizer to read")
    if kind == "gpt2":
        if metadata.get("tokenizer.ggml.add_space_prefix"):
            raise CheckpointError("tokenizer.ggml.add_space_prefix = True on a byte-level BPE is not implemented")
        pre = pre_tokenizer(metadata)
        tokenizer = byte_level_bpe(metadata, pre.regexes, pre.ignore_merges)
        add_bos_default = pre.add_bos
    elif kind == "llama":
        tokenizer = sentencepiece_bpe(metadata)
        add_bos_default = True
    else:
        raise CheckpointError(
            f"tokenizer.ggml.model = {kind!r} is not supported (supported: 'gpt2' byte-level BPE, "
            "'llama' SentencePiece)"
        )
    meta: dict[str, Any] = {"tokenizer_model": kind, "tokenizer_pre": metadata.get("tokenizer.ggml.pre")}
    for key, meta_key in (("tokenizer.ggml.bos_token_id", "bos_token"), ("tokenizer.ggml.eos_token_id", "eos_token")):
        token_id = metadata.get(key)
        if token_id is not None:
            if not 0 <= int(token_id) < len(tokens):
                raise CheckpointError(f"{key} = {token_id} is outside the {len(tokens)} tokens")
            meta[meta_key] = tokens[int(token_id)]
    add_bos = bool(metadata.get("tokenizer.ggml.add_bos_token", add_bos_default))
    if add_bos and "bos_token" not in meta:
        raise CheckpointError("tokenizer.ggml.add_bos_token is true but tokenizer.ggml.bos_token_id is missing")
    meta["prepend_bos"] = add_bos
    if isinstance(metadata.get("tokenizer.chat_template"), str):
        meta["chat_template"] = metadata["tokenizer.chat_template"]
    return tokenizer, meta


def pre_tokenizer(metadata: dict[str, Any]) -> PreTokenizer:
    pre = metadata.get("tokenizer.ggml.pre")
    if pre is None or pre == "default":
        raise CheckpointError(
            f"tokenizer.ggml.pre = {pre!r}: the file does not say how its text was split before BPE (llama.cpp "
            "falls back to a generic split and warns that quality degrades); re-convert it with a recent llama.cpp"
        )
    if pre not in PRE_TOKENIZERS:
        raise CheckpointError(
            f"tokenizer.ggml.pre = {pre!r} is not implemented; supported: {', '.join(sorted(PRE_TOKENIZERS))}"
        )
    return PRE_TOKENIZERS[pre]


def byte_level_bpe(metadata: dict[str, Any], regexes: tuple[str, ...], ignore_merges: bool) -> HubTokenizer:
    """GPT-2-style byte-level BPE from tokens + merges, split first by llama.cpp's regexes."""
    tokens: list[str] = metadata["tokenizer.ggml.tokens"]
    vocab = _vocab(tokens)
    merges = []
    for index, merge in enumerate(metadata.get("tokenizer.ggml.merges") or []):
        left, sep, right = merge.partition(" ")
        if not sep or not left or not right:
            raise CheckpointError(f"tokenizer.ggml.merges holds {merge!r}, not two tokens separated by a space")
        for part in (left, right, left + right):  # a merge joins two tokens of the vocabulary into a third
            if part not in vocab:
                raise CheckpointError(f"tokenizer.ggml.merges[{index}] = {merge!r} names {part!r}, which is not "
                                      "in tokenizer.ggml.tokens")
        merges.append((left, right))
    bpe = models.BPE(vocab=vocab, merges=merges, ignore_merges=ignore_merges)
    tok = Tokenizer(bpe)
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Split(Regex(regex), behavior="isolated") for regex in regexes]
        + [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]
    )
    tok.decoder = decoders.ByteLevel()
    _add_special_tokens(tok, metadata)
    return HubTokenizer(tok, "bpe")


def sentencepiece_bpe(metadata: dict[str, Any]) -> HubTokenizer:
    """Llama-style SentencePiece BPE: "▁" for spaces, merges ranked by the score of the piece they make,
    bytes (<0xXX>) for whatever the vocabulary lacks."""
    tokens: list[str] = metadata["tokenizer.ggml.tokens"]
    scores = metadata.get("tokenizer.ggml.scores")
    if scores is None or len(scores) != len(tokens):
        raise CheckpointError("a SentencePiece tokenizer needs tokenizer.ggml.scores, one per token")
    if metadata.get("tokenizer.ggml.remove_extra_whitespaces"):
        raise CheckpointError("tokenizer.ggml.remove_extra_whitespaces = True is not implemented")
    types = _token_types(metadata, len(tokens))
    vocab = _vocab(tokens)
    mergeable = {token: float(score) for token, score, kind in zip(tokens, scores, types, strict=True)
                 if kind in (NORMAL, USER_DEFINED)}
    ranked: list[tuple[float, int, tuple[str, str]]] = []
    splits = _Splits(vocab)
    for piece, score in mergeable.items():
        local = splits.of(piece)
        local.sort(key=lambda pair: (vocab[pair[0]], vocab[pair[1]]))
        ranked.extend((-score, vocab[piece], pair) for pair in local)
    ranked.sort(key=lambda item: (item[0], item[1]))
    unk_id = metadata.get("tokenizer.ggml.unknown_token_id")
    unk = tokens[int(unk_id)] if unk_id is not None and 0 <= int(unk_id) < len(tokens) else None
    bpe = models.BPE(vocab=vocab, merges=[pair for _, _, pair in ranked], unk_token=unk, byte_fallback=True,
                     fuse_unk=True)
    tok = Tokenizer(bpe)
    prefix = bool(metadata.get("tokenizer.ggml.add_space_prefix", True))
    steps = [normalizers.Prepend("\u2581")] if prefix else []
    tok.normalizer = normalizers.Sequence([*steps, normalizers.Replace(" ", "\u2581")])
    decode = [decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()]
    tok.decoder = decoders.Sequence([*decode, decoders.Strip(" ", 1, 0)] if prefix else decode)
    _add_special_tokens(tok, metadata)
    return HubTokenizer(tok, "sentencepiece")


class _Splits:
    """Every way to cut a token into two tokens of the vocabulary, in time linear in its length for the usual
    vocabulary: a cut is tried (sliced and looked up) only where both halves have a length some token has, so a
    1.2-million-character token among tokens of at most 16 characters costs one pass over its length instead of
    a million slices of it (the cost grew with the square of its length, and start-up stalled). Each half is the
    vocabulary's own string, not a new copy. gguf_layout bounds every token (MAX_TOKEN_BYTES) and the whole
    vocabulary before this runs, which bounds the rare vocabulary that has tokens of every length too. The merges
    themselves are bounded (MAX_MERGE_CHARS, the characters of every merged piece counted once per cut): tokens
    "a", "aa", ..., "a" * 1024 (half a megabyte) cut into half a million merges and took 1.7 GB to build."""

    def __init__(self, vocab: dict[str, int]) -> None:
        self.chars = 0  # characters of the pieces of every cut so far
        self.vocab = vocab
        self.by_id = {index: token for token, index in vocab.items()}
        longest = max((len(token) for token in vocab), default=0)
        self.has_length = bytearray(longest + 1)
        for token in vocab:
            self.has_length[len(token)] = 1

    def of(self, piece: str) -> list[tuple[str, str]]:
        vocab, has_length, by_id = self.vocab, self.has_length, self.by_id
        size = len(piece)
        out = []
        for cut in range(1, size):
            if has_length[cut] and has_length[size - cut]:
                left = vocab.get(piece[:cut])
                if left is not None:
                    right = vocab.get(piece[cut:])
                    if right is not None:
                        out.append((by_id[left], by_id[right]))
                        self.chars += size
        if self.chars > MAX_MERGE_CHARS:
            raise CheckpointError(f"the SentencePiece vocabulary cuts into more than {MAX_MERGE_CHARS:,} characters "
                                  "of merges (its tokens share too many ways to cut them)")
        return out


def _vocab(tokens: list[str]) -> dict[str, int]:
    """token -> id; a token listed twice keeps its first id (the later one is unreachable from text)."""
    vocab: dict[str, int] = {}
    for index, token in enumerate(tokens):
        vocab.setdefault(token, index)
    return vocab


def _token_types(metadata: dict[str, Any], n_tokens: int) -> list[int]:
    types = metadata.get("tokenizer.ggml.token_type")
    if types is None:
        return [NORMAL] * n_tokens
    if len(types) != n_tokens:
        raise CheckpointError(f"tokenizer.ggml.token_type has {len(types)} entries for {n_tokens} tokens")
    return [int(t) for t in types]


def _add_special_tokens(tok: Tokenizer, metadata: dict[str, Any]) -> None:
    """Control tokens (<|im_start|>, <s> ...) and user-defined ones match as whole tokens in the text, as
    llama.cpp does when it parses special tokens; the chat template writes them."""
    tokens: list[str] = metadata["tokenizer.ggml.tokens"]
    types = _token_types(metadata, len(tokens))
    control = [AddedToken(t, special=True, normalized=False) for t, kind in zip(tokens, types, strict=True)
               if kind == CONTROL]
    user = [AddedToken(t, special=False, normalized=False) for t, kind in zip(tokens, types, strict=True)
            if kind == USER_DEFINED]
    if control:
        tok.add_special_tokens(control)
    if user:
        tok.add_tokens(user)
