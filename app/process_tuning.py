"""Process-wide settings of the server, applied once at startup: torch threads and allocator tuning."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os

import torch

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8
_MMAP_THRESHOLD_MAX = 32 * 1024 * 1024  # glibc's ceiling on 64-bit


def keep_freed_memory(keep_mb: int = 128) -> bool:
    """Ask glibc to keep freed tensor buffers for reuse instead of returning them to the OS.

    A trace keeps each stage's tensor alive, so every traced forward allocates fresh
    buffers. With glibc's defaults the large ones are mmap'ed and unmapped each time, and
    every page is faulted in again; on a GPT-2-sized model that alone costs ~10% of a
    forward pass. Keeping them in the heap makes a traced forward cost what a plain one does.
    All threads share one heap (one arena), so memory freed or pre-touched by one inference
    thread serves the others, and up to `keep_mb` of free memory at the heap's top stays mapped.
    Returns False where this is not glibc (nothing to tune).
    """
    libc = _libc()
    if libc is None:
        return False
    try:
        ok_mmap = libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_MAX)
        ok_trim = libc.mallopt(_M_TRIM_THRESHOLD, max(4 * _MMAP_THRESHOLD_MAX, keep_mb << 20))
        ok_arena = libc.mallopt(_M_ARENA_MAX, 1)
    except (OSError, AttributeError):
        return False
    return bool(ok_mmap and ok_trim and ok_arena)


def release_freed_memory() -> bool:
    """Give the heap's free pages back to the OS (glibc's malloc_trim(0)); False where this is not glibc.

    keep_freed_memory keeps freed memory mapped, for the trace buffers' sake, and so also the weights
    of a from-scratch model once it is gone: its tensors are under the 32 MB mmap threshold, live in
    the heap, and their pages stayed in the server's RSS for good (4 GB after three bursts of distinct
    configs). The resolver calls this when such models are garbage-collected. It also releases the
    pages prefault_heap touched for the trace cache, so the next new traces fault pages in again:
    acceptable, because it happens only when big from-scratch models go, not per request.
    Cost, measured on a ~1 GB heap (glibc 2.36, 2 cores): ~10 ms per 100 MB given back, ~90 ms for
    900 MB, 0.1 ms when there is nothing to give; the heap's one arena is locked meanwhile.
    """
    libc = _libc()
    try:
        return libc is not None and bool(libc.malloc_trim(0))
    except AttributeError:  # a C library without malloc_trim (musl)
        return False


@functools.cache
def _libc() -> ctypes.CDLL | None:
    """The C library, loaded once (find_library runs ldconfig); None where there is none to tune."""
    name = ctypes.util.find_library("c")
    if os.name != "posix" or name is None:
        return None
    try:
        return ctypes.CDLL(name)
    except OSError:
        return None


def prefault_heap(megabytes: int, chunk_kb: int = 256) -> None:
    """Touch `megabytes` of heap, then free it, so that the traces a fresh server caches reuse these pages.

    While the trace cache fills, every new trace lives on beside the cached ones and needs fresh
    memory: ~700 page faults for a 32-token tiny-gpt trace, which on this project's VMs made an
    uncached first view 1.5-2.5x slower than once the cache is full and evicted traces' memory is
    reused (bench/api_latency.py). keep_freed_memory(keep_mb >= megabytes) keeps these pages mapped.
    """
    chunks = [torch.zeros(chunk_kb * 256) for _ in range(max(0, megabytes) * 1024 // chunk_kb)]  # float32
    del chunks


_configured = False


def configure(threads: int | None = None, keep_mb: int = 128) -> None:
    """Set torch's thread count and tune the allocator (keeping up to keep_mb freed), once per process."""
    global _configured
    if _configured:
        return
    if threads:
        torch.set_num_threads(threads)  # else torch's own default: one thread per core
    keep_freed_memory(keep_mb)
    _configured = True
