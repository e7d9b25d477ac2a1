"""Issue 40, failures 4 and 5: a GGUF tokenizer is bounded before it is built (token count, each token's length,
all of its text, read from the header), long SentencePiece tokens are split in linear time, and --add-model
builds a file's tokenizer once."""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import pytest

from checkpoints import CheckpointError, gguf_layout
from checkpoints.gguf_tokenizer import _Splits, _vocab, sentencepiece_bpe

gguf = pytest.importorskip("gguf")
pytest.importorskip("transformers")

from tests.checkpoints.gguf_files import tiny_hf, write_gguf  # noqa: E402
from tests.checkpoints.test_gguf_tokenizer import spm_metadata  # noqa: E402


def spm_file(path: Path, extra_tokens: list[str]) -> Path:
    spm = spm_metadata()
    spm["tokenizer.ggml.tokens"] += extra_tokens
    spm["tokenizer.ggml.scores"] += [-30.0] * len(extra_tokens)
    spm["tokenizer.ggml.token_type"] += [1] * len(extra_tokens)
    write_gguf(path, tiny_hf("llama", vocab=len(spm["tokenizer.ggml.tokens"])), "llama",
               gguf.GGMLQuantizationType.F32, spm=spm)
    return path


def test_a_token_over_the_length_limit_is_refused_from_the_header(tmp_path: Path) -> None:
    from checkpoints.gguf import inspect_gguf

    path = spm_file(tmp_path / "long.gguf", ["▁" + "a" * 1500])
    start = time.perf_counter()
    with pytest.raises(CheckpointError, match=r"item \d+ of tokenizer.ggml.tokens is 1,5\d\d bytes long; the limit "
                                              r"is 1,024"):
        inspect_gguf(path)
    assert time.perf_counter() - start < 5
    inspect_gguf(spm_file(tmp_path / "ok.gguf", ["▁" + "a" * 1000]))  # 1,003 bytes: under the limit


def test_the_token_count_and_total_bytes_are_refused_from_the_header(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe's 10^6 tokens of 1 KB (1.16 GB): the same checks, on a small file, with the limits made small."""
    path = spm_file(tmp_path / "many.gguf", [f"▁w{i}" for i in range(200)])
    n_tokens = len(spm_metadata()["tokenizer.ggml.tokens"]) + 200
    monkeypatch.setattr(gguf_layout, "MAX_VOCAB", n_tokens - 1)
    with pytest.raises(CheckpointError, match=f"tokenizer.ggml.tokens holds {n_tokens:,} items; the limit is"):
        gguf_layout.check_layout(path)
    monkeypatch.setattr(gguf_layout, "MAX_VOCAB", 1 << 19)
    monkeypatch.setattr(gguf_layout, "MAX_VOCAB_BYTES", 2000)
    with pytest.raises(CheckpointError, match="tokenizer.ggml.tokens holds more than 2,000 bytes of text"):
        gguf_layout.check_layout(path)


def naive_splits(vocab: dict[str, int], piece: str) -> list[tuple[str, str]]:
    """The split this replaced: every cut of every token, sliced and looked up (quadratic in its length)."""
    return [(piece[:i], piece[i:]) for i in range(1, len(piece)) if piece[:i] in vocab and piece[i:] in vocab]


def test_the_linear_split_finds_exactly_the_cuts_the_quadratic_one_found() -> None:
    rng = random.Random(0)
    alphabet = "ab▁c"
    tokens = spm_metadata()["tokenizer.ggml.tokens"] + list(alphabet)
    tokens += ["".join(rng.choice(alphabet) for _ in range(rng.randint(2, 9))) for _ in range(3000)]
    vocab = _vocab(tokens)
    splits = _Splits(vocab)
    for piece in vocab:
        assert splits.of(piece) == naive_splits(vocab, piece), piece


def test_a_very_long_sentencepiece_token_is_split_in_linear_time() -> None:
    """A 1.2-million-character token had not finished starting after 110 s (the header limit now refuses it
    first; the split itself no longer grows with the square of a token's length)."""
    metadata: dict[str, Any] = spm_metadata()
    metadata["tokenizer.ggml.tokens"] = [*metadata["tokenizer.ggml.tokens"], "▁" + "z" * 1_200_000]
    metadata["tokenizer.ggml.scores"] = [*metadata["tokenizer.ggml.scores"], -40.0]
    metadata["tokenizer.ggml.token_type"] = [*metadata["tokenizer.ggml.token_type"], 1]
    start = time.perf_counter()
    tokenizer = sentencepiece_bpe(metadata)
    assert time.perf_counter() - start < 5
    assert tokenizer.encode(" the cat") == sentencepiece_bpe(spm_metadata()).encode(" the cat")


def test_add_model_builds_a_gguf_tokenizer_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.catalogue import build_registry
    from checkpoints import gguf as gguf_module
    from tests.app.conftest import make_settings

    path = spm_file(tmp_path / "tiny.gguf", [])
    built: list[int] = []
    original = gguf_module.gguf_tokenizer

    def counted(metadata: dict[str, Any]) -> Any:
        built.append(1)
        return original(metadata)

    monkeypatch.setattr(gguf_module, "gguf_tokenizer", counted)
    registry = build_registry(make_settings(tmp_path, add_models=[f"tiny={path}"], default_model="tiny"))
    assert registry.get("tiny").tokenizer is not None
    assert len(built) == 1


def test_a_vocabulary_that_cuts_into_too_many_merges_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tokens "a", "aa", ..., "a" * 1024 (half a megabyte) cut into half a million merges that took 1.7 GB and 2 s
    to build: the merges' characters are bounded, and the refusal comes before the tokenizer is built."""
    from checkpoints import gguf_tokenizer

    metadata: dict[str, Any] = spm_metadata()
    runs = ["a" * n for n in range(1, 1025)]
    metadata["tokenizer.ggml.tokens"] = [*metadata["tokenizer.ggml.tokens"], *runs]
    metadata["tokenizer.ggml.scores"] = [*metadata["tokenizer.ggml.scores"], *[-float(n) for n in range(1, 1025)]]
    metadata["tokenizer.ggml.token_type"] = [*metadata["tokenizer.ggml.token_type"], *[1] * len(runs)]
    start = time.perf_counter()
    with pytest.raises(CheckpointError, match="cuts into more than 33,554,432 characters of merges"):
        sentencepiece_bpe(metadata)
    assert time.perf_counter() - start < 5
    monkeypatch.setattr(gguf_tokenizer, "MAX_MERGE_CHARS", 10)  # a real vocabulary, under a tiny limit: refused too
    with pytest.raises(CheckpointError, match="more than 10 characters"):
        sentencepiece_bpe(spm_metadata())
