"""Refusing, at load, a model whose weights hold NaN or ±Inf (issue 40): every number the page shows comes from
these weights, and one NaN weight turns whole attention patterns and predictions into NaN.

Every format goes through checkpoints.base.build_model, which asks `nonfinite_weight` about the float32 tensors
it is about to assign and the stored (file-precision, memory-mapped) weights, and refuses the model when it
names one. The test costs no memory: a
tensor is summed in chunks (a sum is finite exactly when every term is, unless it overflows, and then the exact
count is taken), and a stored weight is dequantized CHUNK_ELEMENTS at a time, as a forward pass would.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from model.stored_weights import StoredWeight

CHUNK_ELEMENTS = 1 << 24  # 16 M numbers, 64 MB of float32 at a time for a stored weight


def nonfinite_weight(tensors: Mapping[str, torch.Tensor]) -> str | None:
    """Why the model is refused, naming the first weight (in the model's names, with the file's where it differs) that
    holds a NaN or an infinity, and how many; nothing when every weight is finite. A stored weight's source
    shared by several names (a fused QKV split into three) is read once."""
    seen: set[int] = set()
    for name, tensor in tensors.items():
        if isinstance(tensor, StoredWeight):
            if id(tensor.source) in seen:
                continue
            seen.add(id(tensor.source))
            counts = _stored_counts(tensor)
            where = getattr(tensor.source, "name", None)
        elif tensor.is_floating_point():
            counts = _counts(tensor)
            where = None
        else:
            continue
        if counts is not None:
            nans, infinities = counts
            named = f"{name!r}" + (f" ({where} in the file)" if where and where != name else "")
            return (f"weight {named} holds {nans:,} NaN and {infinities:,} infinite values; a model with "
                    "non-finite weights is not loaded (every number it shows would be wrong)")
    return None


def _counts(tensor: torch.Tensor) -> tuple[int, int] | None:
    """(NaN, ±Inf) counts of a float tensor when any is non-finite, else None; chunked, nothing copied whole."""
    flat = tensor.detach().reshape(-1)
    if not flat.is_contiguous():
        flat = flat.contiguous()
    counts = [0, 0]
    for first in range(0, flat.numel(), CHUNK_ELEMENTS):
        chunk = flat[first : first + CHUNK_ELEMENTS]
        if torch.isfinite(chunk.sum()):  # finite sum: every term is finite
            continue
        nans = int(torch.isnan(chunk).sum())
        counts[0] += nans
        counts[1] += int(torch.isinf(chunk).sum())
    return (counts[0], counts[1]) if any(counts) else None


def _stored_counts(weight: StoredWeight) -> tuple[int, int] | None:
    """The same for a stored weight, over its whole source (its row order does not change what it holds),
    dequantized a few rows at a time."""
    source = weight.source
    n_rows = source.shape[0]
    per_row = max(1, weight.numel() // max(1, weight.shape[0]))
    step = max(1, CHUNK_ELEMENTS // per_row)
    counts = [0, 0]
    for first in range(0, n_rows, step):
        rows = source.rows(torch.arange(first, min(first + step, n_rows)))
        found = _counts(rows)
        if found is not None:
            counts[0] += found[0]
            counts[1] += found[1]
    return (counts[0], counts[1]) if any(counts) else None
