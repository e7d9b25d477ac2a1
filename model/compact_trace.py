"""A full trace that keeps only what flows between the blocks, and runs a block again when one of its stages is read.

Why: every stage a trace keeps is written to memory outside the CPU's cache, while a plain forward pass reuses a few
hot buffers. On this project's Xeon VMs a full trace that kept all of SmolLM2's 695 stages (106 MB for 55 tokens)
cost 6-9 % more than the plain forward, however few of them were derived rather than kept; one that keeps each
block's input and output (5 MB) costs ~1 %. A block's stages are a pure function of its input and of what the
stack handed it (the mask, the encoder output, Gemma 4's shared K/V and per-layer input), so running the block
again on the kept input gives the same numbers, and reading one layer's stages costs that one layer's work.

Used by `Transformer.run_with_trace` for a full trace without edits or a KV cache (the server's cached traces);
a trace with edits keeps every stage, as an edit may keep state of its own and must run once.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from model.hooks import Trace

_BLOCK = re.compile(r"^((?:encoder\.|decoder\.)?blocks\.\d+\.)")


@dataclass(frozen=True)
class BlockCall:
    """A block and what it was called with besides its input (its stage hook_resid_pre)."""

    block: nn.Module
    args: tuple[Any, ...]


class CompactTrace(Trace):
    """Name -> tensor for every stage of a full forward pass; a block's inner stages computed again when read.

    Reading a stage of layer L runs layer L once on its kept input and keeps that run (the last block read):
    the stages of one layer cost one layer's work together, then nothing.
    """

    def __init__(self, wanted: frozenset[str] | list[str]) -> None:
        super().__init__(wanted)
        self.calls: dict[str, BlockCall] = {}  # block prefix ("blocks.3.") -> its call
        self._inside: str | None = None  # the prefix of the block running now
        self._again: tuple[str, Trace] | None = None  # (prefix, its stages) of the last block run again
        self._block_bytes: dict[str, int] = {}  # prefix -> the bytes of the block's stages left out

    def record(self, name: str, dims: tuple[str, ...], tensor: torch.Tensor) -> None:
        inside = self._inside
        if inside is not None and name != inside + "hook_resid_pre":  # a run again makes all but its input anew
            self._block_bytes[inside] = self._block_bytes.get(inside, 0) + tensor.numel() * tensor.element_size()
            if name != inside + "hook_resid_post":
                self.dims[name] = dims  # where it comes in the pass, and its dims; its numbers when it is read
                return
        super().record(name, dims, tensor)

    def run_block(self, block: nn.Module, prefix: str, x: torch.Tensor, args: tuple[Any, ...],
                  kept_args: tuple[Any, ...]) -> torch.Tensor:
        """block(x, *args), keeping its input and output and, to run it again, kept_args (args as they are now:
        a stack passes a copy of what later blocks will add to)."""
        self.calls[prefix] = BlockCall(block, kept_args)
        self._inside = prefix
        try:
            output: torch.Tensor = block(x, *args)
        finally:
            self._inside = None
        return output

    def __getitem__(self, name: str) -> torch.Tensor:
        kept = self.tensors.get(name)
        if kept is not None:
            return kept
        if name not in self.dims:
            raise KeyError(name)
        found = _BLOCK.match(name)
        if found is None or found.group(1) not in self.calls:  # cannot happen: only a block's stages are left out
            raise KeyError(name)
        return self.block_stages(found.group(1))[name]

    def block_stages(self, prefix: str) -> Trace:
        """Every stage of one block, from running it again on its kept input."""
        last = self._again
        if last is not None and last[0] == prefix:
            return last[1]
        call = self.calls[prefix]
        with torch.inference_mode(), Trace([n for n in self.dims if n.startswith(prefix)]) as again:
            call.block(self.tensors[prefix + "hook_resid_pre"], *call.args)
        self._again = (prefix, again)  # one tuple, swapped whole: threads reading a cached trace see either
        return again

    def nbytes(self) -> int:
        """What it holds at most: its kept tensors and the stages of the one block it keeps after a read."""
        return super().nbytes() + max(self._block_bytes.values(), default=0)

    def __contains__(self, name: object) -> bool:
        return name in self.dims

    def __iter__(self) -> Iterator[str]:
        return iter(self.dims)

    def __len__(self) -> int:
        return len(self.dims)
