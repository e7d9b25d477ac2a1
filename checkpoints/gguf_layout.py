"""A GGUF file's layout checked against its size before anything is read from it.

gguf.GGUFReader trusts the file: it believes every count and length it reads, builds one Python object
per array element, and maps tensors wherever their offsets point. A hostile or truncated file can then
make it run for minutes (a metadata array of 2^60 bytes), take gigabytes, or hand over garbage weights
(an unaligned tensor overlapping another). This walks the same header with fixed-size reads and refuses,
by name, anything that cannot fit in the file or that llama.cpp itself would refuse:

- every string and array must fit in the bytes that are left; arrays hold at most MAX_ARRAY items and are
  not nested; keys are unique;
- a vocabulary (`tokenizer.ggml.tokens`, and its merges) holds at most MAX_VOCAB items of at most
  MAX_TOKEN_BYTES each (a merge: two tokens and a space) and MAX_VOCAB_BYTES in all (merges: twice that);
- tensors: at most 4 dimensions, a known storage type, whole blocks, unique names, offsets aligned to
  `general.alignment`, inside the data section, and not overlapping one another.

The walk costs one pass over the header (about a second for a 256k-token vocabulary) and no tensor data.
"""

from __future__ import annotations

import mmap
import struct
from pathlib import Path
from typing import Any

from checkpoints.base import CheckpointError

GGUF_VERSIONS = (2, 3)
MAX_ARRAY = 1 << 21  # items in one metadata array; the largest vocabularies (and their merges) are ~300k
MAX_KEYS = 1 << 16
MAX_TENSORS = 1 << 16
MAX_DIMS = 4  # GGML_MAX_DIMS
MAX_STRING = 1 << 27  # 128 MiB: an embedded tokenizer.json is a few MB
# a vocabulary, bounded before the tokenizer is built (Gemma 3's 262,144 tokens take about 4 MB): a count, each
# token's length and the whole (the probe's 10^6 tokens of 1 KB took 6 GB of memory before being refused)
MAX_VOCAB = 1 << 19  # 524,288 tokens, twice the largest vocabulary in use
MAX_TOKEN_BYTES = 1 << 10  # 1 KiB of UTF-8: real tokens are at most a few hundred bytes (runs of spaces, dashes)
MAX_VOCAB_BYTES = 1 << 25  # 32 MiB of token text in all
VOCAB_KEYS = ("tokenizer.ggml.tokens", "tokenizer.ggml.merges")  # a merge is two tokens and a space
DEFAULT_ALIGNMENT = 32

# value type -> (struct format, size); 8 = string, 9 = array
SCALARS: dict[int, tuple[str, int]] = {
    0: ("<B", 1), 1: ("<b", 1), 2: ("<H", 2), 3: ("<h", 2), 4: ("<I", 4), 5: ("<i", 4), 6: ("<f", 4),
    7: ("<?", 1), 10: ("<Q", 8), 11: ("<q", 8), 12: ("<d", 8),
}
STRING, ARRAY = 8, 9


class _Cursor:
    """Reads from a memory-mapped file, refusing any read past its end."""

    def __init__(self, data: Any, name: str) -> None:
        self.data, self.name, self.at = data, name, 0

    @property
    def left(self) -> int:
        return len(self.data) - self.at

    def fail(self, what: str) -> CheckpointError:
        return CheckpointError(f"{self.name} is not a valid GGUF file: {what} (at byte {self.at})")

    def unpack(self, fmt: str, size: int) -> Any:
        if size > self.left:
            raise self.fail("it ends in the middle of its header (truncated?)")
        value = struct.unpack_from(fmt, self.data, self.at)[0]
        self.at += size
        return value

    def string(self, what: str) -> str:
        length = self.unpack("<Q", 8)
        if length > min(self.left, MAX_STRING):
            raise self.fail(f"{what} says it is {length} bytes long, but only {self.left} bytes are left "
                            "(truncated?)")
        raw = bytes(self.data[self.at:self.at + length])
        self.at += length
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise self.fail(f"{what} is not UTF-8 text: {error}") from error

    def skip(self, n_bytes: int, what: str) -> None:
        if n_bytes > self.left:
            raise self.fail(f"{what} needs {n_bytes} bytes, but only {self.left} are left")
        self.at += n_bytes


def check_layout(path: Path) -> None:
    """Raise CheckpointError naming the first thing in the file's header that cannot be true of its size."""
    with open(path, "rb") as handle:
        if path.stat().st_size == 0:
            raise CheckpointError(f"{path.name} is empty")
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            _walk(_Cursor(data, path.name))


def _walk(cursor: _Cursor) -> None:
    if cursor.unpack("<4s", 4) != b"GGUF":
        raise cursor.fail("it does not start with the bytes 'GGUF'")
    version = cursor.unpack("<I", 4)
    if version & 0xFFFF == 0 and version != 0:
        raise cursor.fail("it is written in big-endian byte order, which this loader (like llama.cpp) does not read")
    if version not in GGUF_VERSIONS:
        raise cursor.fail(f"GGUF version {version} is not supported (only versions 2 and 3)")
    n_tensors, n_keys = cursor.unpack("<Q", 8), cursor.unpack("<Q", 8)
    if n_keys > MAX_KEYS or n_keys * 13 > cursor.left:  # a key needs at least 8 + 1 + 4 bytes
        raise cursor.fail(f"it says it has {n_keys} metadata keys, more than its size can hold")
    if n_tensors > MAX_TENSORS or n_tensors * 24 > cursor.left:  # a tensor's info needs at least 8 + 4 + 8 + 4
        raise cursor.fail(f"it says it has {n_tensors} tensors, more than its size (or {MAX_TENSORS}) allows")
    alignment = DEFAULT_ALIGNMENT
    keys: set[str] = set()
    for _ in range(n_keys):
        key = cursor.string("a metadata key")
        if key in keys:
            raise cursor.fail(f"the metadata key {key!r} appears twice")
        keys.add(key)
        kind = cursor.unpack("<I", 4)
        value = _value(cursor, kind, key)
        if key == "general.alignment":
            if kind != 4 or not isinstance(value, int) or value <= 0 or value & (value - 1):
                raise cursor.fail(f"general.alignment = {value!r} is not a power of two stored as uint32")
            alignment = value
    spans = _tensor_infos(cursor, n_tensors, alignment)
    data_start = cursor.at + (-cursor.at % alignment)
    _check_spans(cursor, spans, data_start)


def _value(cursor: _Cursor, kind: int, key: str) -> Any:
    if kind in SCALARS:
        return cursor.unpack(*SCALARS[kind])
    if kind == STRING:
        return cursor.string(f"the value of {key}")
    if kind != ARRAY:
        raise cursor.fail(f"the metadata key {key!r} has an unknown value type {kind}")
    item, count = cursor.unpack("<I", 4), cursor.unpack("<Q", 8)
    if item == ARRAY:
        raise cursor.fail(f"the metadata key {key!r} holds arrays of arrays, which GGUF models do not use")
    if item not in SCALARS and item != STRING:
        raise cursor.fail(f"the metadata key {key!r} is an array of the unknown value type {item}")
    smallest = SCALARS[item][1] if item in SCALARS else 8
    if count > MAX_ARRAY or count * smallest > cursor.left:
        raise cursor.fail(f"the metadata key {key!r} says it holds {count} items: more than the file's size "
                          f"(or the limit of {MAX_ARRAY}) allows")
    if key in VOCAB_KEYS and count > MAX_VOCAB:
        raise cursor.fail(f"{key} holds {count:,} items; the limit is {MAX_VOCAB:,}")
    if item in SCALARS:
        cursor.skip(count * smallest, f"the array {key!r}")
    elif key in VOCAB_KEYS:
        merges = key.endswith("merges")
        _skip_strings(cursor, count, key, MAX_TOKEN_BYTES * (2 if merges else 1) + (1 if merges else 0),
                      MAX_VOCAB_BYTES * (2 if merges else 1))
    else:
        _skip_strings(cursor, count, key)
    return None


def _skip_strings(cursor: _Cursor, count: int, key: str, longest: int | None = None, total: int | None = None
                  ) -> None:
    """Step over `count` strings, checking only their lengths (the reader decodes them): a tight loop, because
    a vocabulary and its merges are several hundred thousand strings. `longest` and `total` bound each string's
    bytes and all of them (a vocabulary's tokens)."""
    data, at, size, unpack = cursor.data, cursor.at, len(cursor.data), struct.Struct("<Q").unpack_from
    start = at
    for index in range(count):
        if at + 8 > size:
            cursor.at = at
            raise cursor.fail(f"item {index} of {key!r} runs past the end of the file (truncated?)")
        length = unpack(data, at)[0]
        if longest is not None and length > longest:
            cursor.at = at
            raise cursor.fail(f"item {index} of {key} is {length:,} bytes long; the limit is {longest:,}")
        at += 8 + length
        if at > size:
            cursor.at = at - length - 8
            raise cursor.fail(f"item {index} of {key!r} says it is {length} bytes long, past the end of the file")
        if total is not None and at - start - 8 * (index + 1) > total:
            raise cursor.fail(f"{key} holds more than {total:,} bytes of text; the limit is {total:,}")
    cursor.at = at


def _tensor_infos(cursor: _Cursor, count: int, alignment: int) -> list[tuple[int, int, str]]:
    """(offset, bytes, name) of every tensor, each checked on its own."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    sizes = {int(kind): size for kind, size in GGML_QUANT_SIZES.items()}
    spans: list[tuple[int, int, str]] = []
    names: set[str] = set()
    for _ in range(count):
        name = cursor.string("a tensor name")
        if name in names:
            raise cursor.fail(f"the tensor {name!r} appears twice")
        names.add(name)
        n_dims = cursor.unpack("<I", 4)
        if not 1 <= n_dims <= MAX_DIMS:
            raise cursor.fail(f"tensor {name!r} has {n_dims} dimensions (GGUF allows 1 to {MAX_DIMS})")
        dims = [cursor.unpack("<Q", 8) for _ in range(n_dims)]
        kind, offset = cursor.unpack("<I", 4), cursor.unpack("<Q", 8)
        if kind not in sizes:
            raise cursor.fail(f"tensor {name!r} has the unknown storage type {kind}")
        block, block_bytes = sizes[kind]
        elements = 1
        for dim in dims:
            if dim == 0 or dim > 1 << 40:
                raise cursor.fail(f"tensor {name!r} has the dimension {dim}")
            elements *= dim
        if dims[0] % block:
            what = GGMLQuantizationType(kind).name
            raise cursor.fail(f"tensor {name!r}: a row of {dims[0]} values is not whole {what} blocks of {block}")
        if offset % alignment:
            raise cursor.fail(f"tensor {name!r} starts at offset {offset}, not a multiple of the alignment {alignment}")
        spans.append((offset, elements // block * block_bytes, name))
    return spans


def _check_spans(cursor: _Cursor, spans: list[tuple[int, int, str]], data_start: int) -> None:
    size = len(cursor.data)
    end_of_previous, previous = 0, ""
    for offset, n_bytes, name in sorted(spans):
        if data_start + offset + n_bytes > size:
            raise CheckpointError(f"{cursor.name} is not a valid GGUF file: tensor {name!r} needs bytes "
                                  f"{data_start + offset} to {data_start + offset + n_bytes}, but the file has "
                                  f"{size} (truncated?)")
        if offset < end_of_previous:
            raise CheckpointError(f"{cursor.name} is not a valid GGUF file: tensor {name!r} overlaps {previous!r}")
        end_of_previous, previous = offset + n_bytes, name
