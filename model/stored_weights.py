"""Weights kept in their file's precision (float16, bfloat16, or quantized blocks) that read as float32.

A `StoredWeight` is a tensor that holds no float32 numbers: it has a shape and reads as float32, and
every use materializes it from its `WeightSource` (checkpoints/ supplies the sources: a memory-mapped
GGUF tensor, a float16 tensor ...). So a forward pass dequantizes one matrix at a time, as it reaches
it, and frees it after; every number shown is still computed in float32, from the same float32
weights the eager path would hold. What reads weights (nn.Linear, nn.Embedding, `W_U.weight[t]`,
`.double()`, parameter counts) goes through the same access path as for an ordinary parameter:

    embedding:    F.embedding(ids, W_E)   -> only the rows asked for             [batch, pos, d_model]
    W_U.weight[t] / W[ids]                -> only those rows                      [d_model] / [n, d_model]
    unembedding:  F.linear(x, W_U)        -> in chunks of the vocabulary          [batch, pos, d_vocab]
    any other op                          -> the whole matrix, float32, then the op
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any, Protocol

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils._pytree import tree_map

# a linear layer with more weights than this is applied in slices of its output rows (the unembedding:
# 128256 x 3072 would be 1.6 GB of float32 at once); each slice's numbers are the same dot products
CHUNK_ELEMENTS = 1 << 26  # 64 M weights, 256 MB of float32


class WeightSource(Protocol):
    """A matrix held in some precision, read as float32 rows."""

    shape: tuple[int, ...]  # torch order: [rows, ...]
    nbytes: int  # bytes it holds in memory (or maps from its file)
    precision: str  # what it holds, in words ("Q8_0", "F16", "BF16" ...)

    def rows(self, index: torch.Tensor | None) -> torch.Tensor:
        """float32 rows index [n] (None: all of them), [n, ...]."""
        ...


_shapes_only = threading.local()


@contextlib.contextmanager
def shapes_only() -> Iterator[None]:
    """For passes that only need the stages' names and shapes (Transformer.trace_names' probe): a stored
    weight reads as uninitialized float32 of its shape, nothing is dequantized."""
    _shapes_only.on = True
    try:
        yield
    finally:
        _shapes_only.on = False


class StoredWeight(torch.Tensor):
    """A float32-reading tensor over a WeightSource; `order` picks and orders its rows (a loader's permutation)."""

    source: WeightSource
    order: torch.Tensor | None

    @staticmethod
    def __new__(cls, source: WeightSource, order: torch.Tensor | None = None) -> StoredWeight:
        shape = source.shape if order is None else (len(order), *source.shape[1:])
        return torch.Tensor._make_wrapper_subclass(  # type: ignore[attr-defined,no-any-return]
            cls, shape, dtype=torch.float32, device=torch.device("cpu"), requires_grad=False)

    def __init__(self, source: WeightSource, order: torch.Tensor | None = None) -> None:
        self.source = source
        self.order = order

    def __repr__(self, *args: Any, **kwargs: Any) -> str:  # type: ignore[override]
        return f"StoredWeight({list(self.shape)}, {self.source.precision})"

    def reordered(self, order: torch.Tensor) -> StoredWeight:
        """The rows order[i] of this weight, still stored (llama.cpp's Q/K row permutation, undone lazily)."""
        return StoredWeight(self.source, order if self.order is None else self.order[order])

    def part(self, index: int) -> StoredWeight:
        """Row `index` of a 3-D weight as a stored weight of its own (one expert of a GGUF file's [expert, rows,
        columns] tensor): nothing is dequantized until a pass uses it."""
        if self.order is not None:
            raise ValueError("a reordered stored weight has no parts")
        return StoredWeight(PartSource(self.source, index))

    def rows(self, index: torch.Tensor) -> torch.Tensor:
        """float32 rows index [n], [n, ...]: only those are dequantized."""
        if getattr(_shapes_only, "on", False):
            return torch.empty(len(index), *self.shape[1:])
        return self.source.rows(index if self.order is None else self.order[index])

    def materialize(self) -> torch.Tensor:
        """The whole weight as float32 (a new tensor each time: nothing is kept)."""
        if getattr(_shapes_only, "on", False):
            return torch.empty(self.shape)
        return self.source.rows(self.order)

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if func is F.embedding and isinstance(args[1], StoredWeight) and not kwargs.get("max_norm"):
            ids = args[0]  # [batch, pos]
            return args[1].rows(ids.reshape(-1)).view(*ids.shape, -1)  # [batch, pos, d_model]
        if func is F.linear and isinstance(args[1], StoredWeight) and not isinstance(args[0], StoredWeight):
            bias = args[2] if len(args) > 2 else kwargs.get("bias")
            return chunked_linear(args[0], args[1], bias)
        if func is torch.Tensor.__getitem__ and isinstance(args[0], StoredWeight):
            index = args[1]
            if isinstance(index, int):
                return args[0].rows(torch.tensor([index % args[0].shape[0]]))[0]
            if isinstance(index, torch.Tensor) and index.dtype in (torch.int64, torch.int32) and index.dim() == 1:
                return args[0].rows(index.long() % args[0].shape[0])
        if func in (torch.Tensor.chunk, torch.chunk) and isinstance(args[0], StoredWeight):
            chunks = args[1] if len(args) > 1 else kwargs["chunks"]
            dim = args[2] if len(args) > 2 else kwargs.get("dim", 0)
            if dim == 0:  # GPT-2's fused QKV rows: three stored weights over the same source
                return tuple(args[0].reordered(part) for part in torch.arange(args[0].shape[0]).chunk(chunks))
        if func in (torch.Tensor.split, torch.split) and isinstance(args[0], StoredWeight):
            sizes = args[1] if len(args) > 1 else kwargs.get("split_size", kwargs.get("split_size_or_sections"))
            dim = args[2] if len(args) > 2 else kwargs.get("dim", 0)
            if dim == 0:  # Phi-3's fused QKV and gate/up rows: stored weights over the same source
                return tuple(args[0].reordered(part) for part in torch.arange(args[0].shape[0]).split(sizes))
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **kwargs)

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:  # type: ignore[override]
        if func is torch.ops.aten.detach.default:  # nn.Parameter(weight) detaches: stay stored
            return StoredWeight(args[0].source, args[0].order)
        args, kwargs = tree_map(lambda t: t.materialize() if isinstance(t, StoredWeight) else t, (args, kwargs or {}))
        if func.is_view:  # a view of a temporary: a copy, made outside inference mode (the wrapper is not inference)
            with torch.inference_mode(False):
                return tree_map(lambda t: t.clone() if isinstance(t, torch.Tensor) else t, func(*args, **kwargs))
        return func(*args, **kwargs)


class PartSource:
    """Row `index` of a source of 3 dimensions or more, itself a source: [rows, ...] of [parts, rows, ...]."""

    def __init__(self, source: WeightSource, index: int) -> None:
        self.source, self.index = source, index
        self.shape = tuple(source.shape[1:])
        self.nbytes = source.nbytes // max(1, source.shape[0])
        self.precision = source.precision

    def rows(self, index: torch.Tensor | None) -> torch.Tensor:
        whole = self.source.rows(torch.tensor([self.index]))[0]  # [rows, ...]: this part alone is dequantized
        if index is None or (len(index) == len(whole) and bool((index == torch.arange(len(whole))).all())):
            return whole  # every row in order (a whole pass over it): no copy
        return whole[index]


def chunked_linear(x: torch.Tensor, weight: StoredWeight, bias: torch.Tensor | None) -> torch.Tensor:
    """x [..., d_in] · weightᵀ (+ bias) -> [..., d_out], dequantizing at most CHUNK_ELEMENTS weights at a time."""
    d_out, d_in = weight.shape
    if d_out * d_in <= CHUNK_ELEMENTS:
        return F.linear(x, weight.materialize(), bias)
    step = max(1, CHUNK_ELEMENTS // d_in)
    parts = []
    for first in range(0, d_out, step):
        index = torch.arange(first, min(first + step, d_out))
        parts.append(F.linear(x, weight.rows(index), None if bias is None else bias[index]))  # [..., chunk]
    return torch.cat(parts, dim=-1)  # [..., d_out]


def stored_nbytes(model: nn.Module) -> dict[str, int]:
    """Bytes the model's weights hold: `stored` (file precision, memory-mapped or in memory) and `float32`;
    each tensor once (tied weights are one)."""
    seen: set[int] = set()
    stored = float32 = 0
    for tensor in [*model.parameters(), *model.buffers()]:
        if id(tensor) in seen:
            continue
        seen.add(id(tensor))
        if isinstance(tensor, StoredWeight):
            stored += tensor.source.nbytes * tensor.numel() // max(1, _source_numel(tensor.source))
        else:
            float32 += tensor.numel() * tensor.element_size()
    return {"stored": stored, "float32": float32}


def _source_numel(source: WeightSource) -> int:
    count = 1
    for n in source.shape:
        count *= n
    return count


def has_stored_weights(model: nn.Module) -> bool:
    return any(isinstance(p, StoredWeight) for p in model.parameters())
