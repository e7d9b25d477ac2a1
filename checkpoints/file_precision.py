"""Weights kept in the file's precision, and when: the sources behind model.stored_weights, and the policy.

Policy: a model whose weights fit as float32 under the budget (`float32_budget`, bytes; the server's
TE_FLOAT32_BUDGET_MB) is loaded as today, every weight a float32 tensor (fast: the ablation and lab
panels run many passes). A bigger one keeps each matrix as the file stores it: a GGUF tensor's blocks,
memory-mapped (never read into memory until a pass reaches them), or a Hugging Face float16/bfloat16
tensor; a pass dequantizes one matrix at a time, to the same float32 numbers as the eager path.
Vectors (norm gains, biases) and float32 matrices are float32 either way.

The policy and a progress callback reach the loaders through `load_policy(...)` (a context), so that
every loader keeps its signature: `with load_policy(budget, progress): load_checkpoint(path)`.
"""

from __future__ import annotations

import contextlib
import contextvars
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from checkpoints.base import CheckpointError, StateDict
from model.stored_weights import StoredWeight

Progress = Callable[[int, int], None]  # (done, total) tensors
DEFAULT_FLOAT32_BUDGET = 3 << 30  # 3 GiB: SmolLM2 (0.54 GB), Qwen2.5-0.5B (2 GB) stay float32; a 1B model does not


@dataclass(frozen=True)
class LoadPolicy:
    float32_budget: int = DEFAULT_FLOAT32_BUDGET  # bytes of float32 weights a model may hold; above: file precision
    progress: Progress | None = None

    def keeps_file_precision(self, n_parameters: int, device: str | torch.device) -> bool:
        """Above the budget, on a CPU (a GPU model is float32 on the device, as before)."""
        return n_parameters * 4 > self.float32_budget and torch.device(device).type == "cpu"

    def report(self, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(done, total)


_POLICY: contextvars.ContextVar[LoadPolicy | None] = contextvars.ContextVar("load_policy", default=None)


@contextlib.contextmanager
def load_policy(float32_budget: int | None = None, progress: Progress | None = None) -> Iterator[LoadPolicy]:
    policy = LoadPolicy(DEFAULT_FLOAT32_BUDGET if float32_budget is None else float32_budget, progress)
    token = _POLICY.set(policy)
    try:
        yield policy
    finally:
        _POLICY.reset(token)


def current_policy() -> LoadPolicy:
    return _POLICY.get() or LoadPolicy()


# ---------------------------------------------------------------- GGUF tensors, memory-mapped


def _readonly(array: np.ndarray) -> torch.Tensor:
    """A torch view of a read-only (memory-mapped) array; nothing here ever writes to it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "the given NumPy array is not writable"
        return torch.from_numpy(np.ascontiguousarray(array))


def dequantize_q8_0(raw: torch.Tensor, n_cols: int) -> torch.Tensor:
    """Q8_0 rows [n, blocks * 34 bytes] -> float32 [n, n_cols]: each block is a float16 scale d and 32 int8 q,
    value = d * q (gguf.quants' Q8_0, computed in torch; tests check it equals gguf-py's)."""
    blocks = raw.view(raw.shape[0], -1, 34)  # [n, block, 34 bytes]
    scale = blocks[..., :2].contiguous().view(torch.float16).to(torch.float32)  # [n, block, 1]
    values = blocks[..., 2:].view(torch.int8).to(torch.float32)  # [n, block, 32]
    return values.mul_(scale).view(raw.shape[0], n_cols)


class GGUFSource:
    """One GGUF tensor of 2 dimensions (or 3: a mixture of experts' [expert, out, in]), as the reader memory-maps
    it: rows [out] (experts) of the file's blocks."""

    def __init__(self, tensor: Any) -> None:
        import gguf

        self.name = str(tensor.name)
        self.kind = tensor.tensor_type
        self.precision = self.kind.name
        self.shape = tuple(int(n) for n in reversed(tensor.shape))  # torch order [out, in]
        self.data = tensor.data  # np.memmap: [out, in] (F32/F16) or [out, bytes per row] (blocks)
        self.nbytes = int(tensor.n_bytes)
        if self.data.shape[0] != self.shape[0]:
            raise CheckpointError(f"tensor {self.name!r}: {self.data.shape[0]} rows stored for the shape "
                                  f"{list(self.shape)}")
        self._types = gguf.GGMLQuantizationType

    def rows(self, index: torch.Tensor | None) -> torch.Tensor:
        import gguf

        raw = self.data if index is None else self.data[index.numpy()]
        n_cols = self.shape[-1]
        raw = raw.reshape(-1, raw.shape[-1])  # [rows, columns or bytes]: an expert's rows one after another
        kind = self.kind
        if kind == self._types.F32:
            out = _readonly(raw).to(torch.float32, copy=True)
        elif kind == self._types.F16:
            out = _readonly(raw).to(torch.float32)
        elif kind == self._types.BF16:
            out = _readonly(raw).view(torch.bfloat16).to(torch.float32)
        elif kind == self._types.Q8_0:
            out = dequantize_q8_0(_readonly(raw), n_cols)
        else:
            out = torch.from_numpy(np.asarray(gguf.quants.dequantize(np.asarray(raw), kind), dtype=np.float32))
        return out.view(-1, *self.shape[1:])


def gguf_state(reader: Any, dequantize: Callable[[Any], torch.Tensor], policy: LoadPolicy, stored: bool) -> StateDict:
    """Every tensor of the file by GGUF name, dequantized to float32, or (stored) its matrices kept as the file
    stores them (F32 ones and vectors dequantized); the progress reported after each tensor."""
    tensors = list(reader.tensors)
    out: StateDict = {}
    for done, tensor in enumerate(tensors, 1):
        if stored and len(tensor.shape) in (2, 3) and tensor.tensor_type.name != "F32":  # 3: experts
            out[tensor.name] = StoredWeight(GGUFSource(tensor))
        else:
            out[tensor.name] = dequantize(tensor)
        policy.report(done, len(tensors))
    return out


# ---------------------------------------------------------------- Hugging Face tensors, in memory


class HalfSource:
    """A float16 / bfloat16 matrix in memory (as safetensors read it), rows read as float32."""

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor.contiguous()
        self.shape = tuple(tensor.shape)
        self.nbytes = self.tensor.numel() * self.tensor.element_size()
        self.precision = {torch.float16: "F16", torch.bfloat16: "BF16"}[tensor.dtype]

    def rows(self, index: torch.Tensor | None) -> torch.Tensor:
        return (self.tensor if index is None else self.tensor[index]).to(torch.float32)


def in_file_precision(state: StateDict) -> StateDict:
    """A converted Hugging Face state dict with its float16/bfloat16 matrices stored, the rest unchanged."""
    return {name: StoredWeight(HalfSource(t)) if t.dim() == 2 and t.dtype in (torch.float16, torch.bfloat16) else t
            for name, t in state.items()}


def unpermute_rows(weight: StoredWeight, undo: Callable[[torch.Tensor, int], torch.Tensor],
                   n_heads: int) -> StoredWeight:
    """A row permutation (checkpoints.gguf.unpermute) applied to a stored weight without dequantizing it:
    the permutation of row numbers, kept as the weight's row order."""
    order = undo(torch.arange(weight.shape[0]), n_heads)
    return weight.reordered(order)
