"""Process-wide settings of the server, applied once at startup: torch threads and allocator tuning."""

from __future__ import annotations

import ctypes
import ctypes.util
import os

import torch

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD_MAX = 32 * 1024 * 1024  # glibc's ceiling on 64-bit


def keep_freed_memory() -> bool:
    """Ask glibc to keep freed tensor buffers for reuse instead of returning them to the OS.

    A trace keeps each stage's tensor alive, so every traced forward allocates fresh
    buffers. With glibc's defaults the large ones are mmap'ed and unmapped each time, and
    every page is faulted in again; on a GPT-2-sized model that alone costs ~10% of a
    forward pass. Keeping them in the heap makes a traced forward cost what a plain one does.
    Returns False where this is not glibc (nothing to tune).
    """
    name = ctypes.util.find_library("c")
    if os.name != "posix" or name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        ok_mmap = libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_MAX)
        ok_trim = libc.mallopt(_M_TRIM_THRESHOLD, 4 * _MMAP_THRESHOLD_MAX)
    except (OSError, AttributeError):
        return False
    return bool(ok_mmap and ok_trim)


_configured = False


def configure(threads: int | None = None) -> None:
    """Set torch's thread count and tune the allocator, once per process."""
    global _configured
    if _configured:
        return
    if threads:
        torch.set_num_threads(threads)  # else torch's own default: one thread per core
    keep_freed_memory()
    _configured = True
