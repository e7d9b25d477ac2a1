"""Reading a file of a learner's model store (Ollama, LM Studio) as hostile input, with limits.

A store is a folder on the learner's machine: any of its entries may be a symlink out of it (to /etc/passwd, to
/dev/zero, to another user's files), a FIFO that blocks whoever opens it, a directory, a 50 GB sparse file, or a
manifest of 100,000 nested brackets. Here:
- every path is resolved (symlinks followed, without opening anything) and refused unless it stays inside the
  store's root: nothing outside the store is ever opened;
- only regular files are opened, and a manifest is refused by its size before it is opened (MAX_MANIFEST_BYTES),
  then read through one descriptor, non-blocking, at most one byte past the limit (a file that grows meanwhile);
- a manifest's JSON nesting is measured before it is parsed (MAX_JSON_DEPTH), so the parser never recurses deep;
- the names shown to clients are store-relative (`relative`): absolute paths go to the operator's log only.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable, Iterator
from itertools import accumulate
from pathlib import Path

MAX_MANIFEST_BYTES = 1 << 20  # Ollama's manifests are under 1 KB; a megabyte is a thousand times that
MAX_JSON_DEPTH = 16  # an Ollama manifest nests 3 deep ({"layers": [{...}]})

_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


class StoreEntryError(ValueError):
    """One store entry cannot be offered; the message says why (with store-relative names only)."""


def real_root(root: Path) -> str:
    return os.path.realpath(root)


def relative(root: str, path: str | Path) -> str:
    """The store-relative name of a path inside the store (what a client may see)."""
    return os.path.relpath(path, root)


def inside(root: str, path: Path, what: str) -> str:
    """The resolved path (symlinks followed; nothing opened) of an entry that stays inside the store's real root;
    StoreEntryError when it leaves it."""
    real = os.path.realpath(path)
    if real != root and os.path.commonpath([root, real]) != root:
        raise StoreEntryError(f"{what} {relative(root, path)} is a link out of the store (not opened)")
    return real


def kind(mode: int) -> str | None:
    """What a non-regular file is, in words; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    for test, words in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                        (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return words
    return "not a regular file"


def regular_file(root: str, real: str, what: str) -> os.stat_result:
    """stat() of a resolved path inside the store, refused unless it is a regular file (never opened here)."""
    try:
        status = os.stat(real)
    except OSError as error:
        raise StoreEntryError(f"{what} {relative(root, real)} cannot be read: {error.strerror}") from error
    nature = kind(status.st_mode)
    if nature is not None:
        raise StoreEntryError(f"{what} {relative(root, real)} is {nature}, not a file")
    return status


def read_bounded(root: str, real: str, what: str, limit: int = MAX_MANIFEST_BYTES) -> bytes:
    """The bytes of a regular file inside the store, refused past `limit` bytes before it is opened (by its size)
    and while it is read (a file that grows, or lies about its size)."""
    status = regular_file(root, real, what)
    name = relative(root, real)
    if status.st_size > limit:
        raise StoreEntryError(f"{what} {name} is {status.st_size:,} bytes; the limit is {limit:,} (not read)")
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        descriptor = os.open(real, flags)  # O_NOFOLLOW: a link swapped in since realpath is refused, not followed
    except OSError as error:
        raise StoreEntryError(f"{what} {name} cannot be opened: {error.strerror}") from error
    try:
        if kind(os.fstat(descriptor).st_mode) is not None:  # swapped for a FIFO or a device since the stat
            raise StoreEntryError(f"{what} {name} is not a regular file")
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(descriptor, min(left, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(descriptor)
    if left <= 0:
        raise StoreEntryError(f"{what} {name} is over {limit:,} bytes (read stopped there)")
    return b"".join(chunks)


def json_depth(text: str) -> int:
    """How deep a JSON text's arrays and objects nest, counted outside its strings, in linear time."""
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    return max(accumulate(1 if char in "[{" else -1 for char in brackets), default=0)


def parse_json(text: str, what: str, hook: Callable[[list[tuple[str, object]]], object] | None = None,
               max_depth: int = MAX_JSON_DEPTH) -> object:
    """json.loads, refused first when the text nests deeper than max_depth (the parser recurses per level)."""
    depth = json_depth(text)
    if depth > max_depth:
        raise StoreEntryError(f"{what} nests {depth} levels deep; the limit is {max_depth} (not parsed)")
    try:
        return json.loads(text, object_pairs_hook=hook)
    except ValueError as error:  # JSONDecodeError, and the hook's own refusals
        raise StoreEntryError(f"unreadable {what}: {error}") from error


def entries(root: str, depth: int, keep: Callable[[str], bool] = lambda name: True, under: str = ""
            ) -> Iterator[tuple[tuple[str, ...], str | StoreEntryError]]:
    """Every entry exactly `depth` levels under the store's real root (under its folder `under`, already checked
    with `inside`, when given) whose name passes `keep`, as (its path's parts, its resolved path) or (parts, why it
    is refused): a folder on the way that links out of the store is refused (never listed), and so is any entry
    that does. Folders are listed with os.scandir; no file is opened."""
    start = os.path.realpath(Path(root, under)) if under else root
    yield from _walk(root, start, (under,) if under else (), depth, keep)


def _walk(root: str, folder: str, parts: tuple[str, ...], depth: int, keep: Callable[[str], bool]
          ) -> Iterator[tuple[tuple[str, ...], str | StoreEntryError]]:
    try:
        with os.scandir(folder) as listing:
            names = sorted(entry.name for entry in listing)
    except OSError:
        return
    for name in names:
        here = (*parts, name)
        last = len(here) == depth
        if last and not keep(name):
            continue
        path = Path(folder, name)
        try:
            real = inside(root, path, "the entry" if last else "the folder")
        except StoreEntryError as error:
            yield here, error
            continue
        if last:
            yield here, real
        elif os.path.isdir(real):
            yield from _walk(root, real, here, depth, keep)
