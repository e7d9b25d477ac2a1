"""Hostile GGUF files are refused from their header, in bounded time and memory, with the reason named.

The files are written byte by byte here (gguf's writer would not write most of them), plus the well-formed
tiny model of gguf_files with one thing broken.
"""

from __future__ import annotations

import resource
import struct
import time
from pathlib import Path

import pytest

from checkpoints import CheckpointError, load_checkpoint
from checkpoints.gguf import inspect_gguf
from checkpoints.gguf_layout import MAX_ARRAY, check_layout
from tests.checkpoints.gguf_files import gguf, tiny_hf, write_gguf

U8, U32, STRING, ARRAY, U64 = 0, 4, 8, 9, 10
F32 = 0


def text(value: str) -> bytes:
    raw = value.encode()
    return struct.pack("<Q", len(raw)) + raw


def header(kvs: list[bytes], tensors: list[bytes] = (), version: int = 3) -> bytes:  # type: ignore[assignment]
    return b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs)) + b"".join(kvs) + b"".join(tensors)


def kv(key: str, kind: int, payload: bytes) -> bytes:
    return text(key) + struct.pack("<I", kind) + payload


def tensor(name: str, dims: list[int], offset: int, kind: int = F32) -> bytes:
    return text(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims) + \
        struct.pack("<IQ", kind, offset)


def with_data(head: bytes, n_bytes: int, alignment: int = 32) -> bytes:
    return head + b"\0" * (-len(head) % alignment) + b"\0" * n_bytes


ARCH = kv("general.architecture", STRING, text("llama"))
CASES: dict[str, tuple[bytes, str]] = {
    "array of 2^60 bytes": (header([ARCH, kv("x", ARRAY, struct.pack("<IQ", U8, 2**60))]), "2^60"),
    "array of 2^60 strings": (header([ARCH, kv("x", ARRAY, struct.pack("<IQ", STRING, 2**60))]), "2^60"),
    "array past the limit": (header([ARCH, kv("x", ARRAY, struct.pack("<IQ", U8, MAX_ARRAY + 1) +
                                              b"\0" * (MAX_ARRAY + 1))]), "the limit"),
    "string of 2^60 bytes": (header([kv("general.architecture", STRING, struct.pack("<Q", 2**60))]),
                             "bytes long"),
    "2^60 keys": (b"GGUF" + struct.pack("<IQQ", 3, 0, 2**60), "metadata keys"),
    "2^60 tensors": (b"GGUF" + struct.pack("<IQQ", 3, 2**60, 0), "tensors"),
    "nested arrays": (header([ARCH, kv("x", ARRAY, struct.pack("<IQ", ARRAY, 1))]), "arrays of arrays"),
    "unknown value type": (header([ARCH, kv("x", 99, b"")]), "unknown value type 99"),
    "duplicate key": (header([ARCH, ARCH]), "appears twice"),
    "version 1": (header([ARCH], version=1), "version 1"),
    "big-endian": (b"GGUF" + struct.pack(">IQQ", 3, 0, 0), "big-endian"),
    "unaligned tensor": (with_data(header([ARCH], [tensor("a", [8], 0), tensor("b", [8], 16)]), 64),
                         "not a multiple of the alignment 32"),
    "overlapping tensors": (with_data(header([ARCH], [tensor("a", [16], 0), tensor("b", [8], 32)]), 64),
                            "overlaps"),
    "tensor past the end": (with_data(header([ARCH], [tensor("a", [8], 0)]), 16), "truncated"),
    "2^40 elements": (with_data(header([ARCH], [tensor("a", [2**20, 2**20, 2], 0)]), 64), "truncated"),
    "5 dimensions": (with_data(header([ARCH], [tensor("a", [1, 1, 1, 1, 1], 0)]), 64), "5 dimensions"),
    "unknown storage type": (with_data(header([ARCH], [tensor("a", [8], 0, kind=77)]), 64),
                             "unknown storage type 77"),
    "partial block": (with_data(header([ARCH], [tensor("a", [31], 0, kind=8)]), 64), "whole Q8_0 blocks"),
    "duplicate tensor": (with_data(header([ARCH], [tensor("a", [8], 0), tensor("a", [8], 32)]), 64),
                         "appears twice"),
    "bad alignment": (with_data(header([ARCH, kv("general.alignment", U32, struct.pack("<I", 24))]), 0),
                      "power of two"),
    "truncated key": (header([ARCH])[:-3], "truncated"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_hostile_header_is_refused_quickly_naming_the_problem(tmp_path: Path, case: str) -> None:
    data, words = CASES[case]
    path = tmp_path / "hostile.gguf"
    path.write_bytes(data)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    for check in (check_layout, inspect_gguf, load_checkpoint):
        with pytest.raises(CheckpointError) as refused:
            check(path)
        message = str(refused.value)
        assert words.replace("2^60", str(2**60)) in message, message
        assert "hostile.gguf" in message
    assert time.perf_counter() - started < 5
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200 * 1024  # KiB: no huge allocation


def test_a_merge_naming_a_token_outside_the_vocabulary_is_refused_by_name(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.checkpoints import gguf_files

    real = gguf_files.byte_level_vocab

    def vocab() -> tuple[list[str], list[str], list[int]]:
        tokens, merges, types = real()
        return tokens, ["a zzz", *merges], types

    monkeypatch.setattr(gguf_files, "byte_level_vocab", vocab)
    path = tmp_path / "bad-merge.gguf"
    write_gguf(path, tiny_hf("llama"), "llama", gguf.GGMLQuantizationType.F32)
    with pytest.raises(CheckpointError, match=r"tokenizer.ggml.merges\[0\] = 'a zzz' names 'zzz', which is not in"):
        load_checkpoint(path)


def test_the_layout_check_accepts_every_well_formed_file(tmp_path: Path) -> None:
    for kind in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16, gguf.GGMLQuantizationType.Q8_0):
        path = tmp_path / f"{kind.name}.gguf"
        write_gguf(path, tiny_hf("llama"), "llama", kind)
        check_layout(path)
        assert load_checkpoint(path).model.cfg.n_layers == 2
