"""Torch tensor -> JSON: `{name, dims, shape, dtype, data}` with the batch dimension removed.

`data` is either nested lists (4 significant digits, masked cells as null because JSON
has no -inf; a float64 array until rendered) or Plotly's typed-array form `{dtype, bdata,
shape}` (base64 of the raw little-endian values; masked cells become NaN). float16 travels
as dtype "f2", which plotly.js does not know: the page decodes it to a Float32Array itself.

A tensor holding NaN or ±Inf that no mask put there (an overflow) also gets `nonfinite`, their count, so that
a null is never mistaken for a masked cell or a silent zero.

This is serialization only: no model math happens here.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import torch

Encoding = Literal["list", "base64"]
DType = Literal["float32", "float16"]

SIGNIFICANT_DIGITS = 4
_SHORT_TYPES = {"float32": "f4", "float16": "f2", "int32": "i4"}


with np.errstate(over="ignore"):
    _POW10 = 10.0 ** np.arange(-330, 331)  # _POW10[k + 330] == 10.0**k (inf past 1e308)


def round_significant(values: np.ndarray, digits: int = SIGNIFICANT_DIGITS) -> np.ndarray:
    """Round to `digits` significant digits so each value prints short (0.1234, not 0.12340000271).

    Scaling by an exact power of ten and dividing back (or multiplying, for large values)
    lands on the double nearest the decimal, whose repr is the short form. The decimal exponent
    comes from the binary one (frexp) and a table of powers of ten, not from log10 and pow,
    which took most of the time of a first view's serialization.
    """
    x = values.astype(np.float64)
    magnitude = np.abs(x)
    _, binary = np.frexp(magnitude)  # magnitude = m * 2**binary, m in [0.5, 1); 0, inf and nan give binary 0
    # floor((binary - 1) * log10(2)) in integers, exact for |binary| < 1100: floor(log10(magnitude)), or one less
    decimal = ((binary - 1) * 78913) >> 18
    decimal += magnitude >= _POW10[decimal + 331]  # the one less, fixed exactly
    # 0, inf and nan come out as they went in: 0 * scale, inf * scale and nan * scale round to themselves
    exponent = np.clip(digits - 1 - decimal, -300, 300)
    up = exponent >= 0
    if up.all():  # every value below 10**digits: the usual case, one vectorized pass
        scale = _POW10[exponent + 330]
        return np.round(x * scale) / scale
    out = np.empty_like(x)
    scale_up = _POW10[exponent[up] + 330]
    out[up] = np.round(x[up] * scale_up) / scale_up
    scale_down = _POW10[-exponent[~up] + 330]
    out[~up] = np.round(x[~up] / scale_down) * scale_down
    return out


def _to_lists(array: np.ndarray) -> Any:
    """Nested lists in the JSON body. Finite floats stay a float64 array, which orjson writes as the same nested
    lists (same bytes) without a Python float per cell: 0.25 ms less for a first view's 6,144 numbers. orjson
    takes C-contiguous arrays of at least one dimension only (a stage such as hook_z is a strided view)."""
    if array.dtype.kind in "iu":
        return array.tolist()
    rounded = np.asarray(round_significant(array))  # a 0-d array comes back as a numpy scalar
    masked = ~np.isfinite(rounded)
    if masked.any():
        cells = rounded.astype(object)
        cells[masked] = None  # -inf (masked attention) and NaN have no JSON spelling
        return cells.tolist()
    return rounded.tolist() if rounded.ndim == 0 else np.ascontiguousarray(rounded)


def _to_typed_array(array: np.ndarray) -> dict[str, Any]:
    data = np.ascontiguousarray(array)
    if data.dtype.kind == "f":
        data = np.where(np.isfinite(data), data, np.nan).astype(data.dtype)  # masked -> NaN
    spec: dict[str, Any] = {
        "dtype": _SHORT_TYPES[str(data.dtype)],
        "bdata": base64.b64encode(data.astype(data.dtype.newbyteorder("<")).tobytes()).decode("ascii"),
    }
    if data.ndim > 1:
        spec["shape"] = ", ".join(str(n) for n in data.shape)  # Plotly's spelling: "rows, cols"
    return spec


def encode_tensor(
    name: str,
    tensor: torch.Tensor,
    dims: Sequence[str],
    encoding: Encoding = "list",
    dtype: DType = "float32",
) -> dict[str, Any]:
    """One tensor for the API. A leading `batch` dimension (always 1 here) is dropped."""
    dims = list(dims)
    if dims and dims[0] == "batch":
        tensor, dims = tensor[0], dims[1:]
    tensor = tensor.detach().cpu()
    if tensor.is_floating_point():
        array = tensor.to(torch.float16 if dtype == "float16" else torch.float32).numpy()
        out_dtype: str = dtype
    else:
        array = tensor.to(torch.int32).numpy()  # token ids; plotly.js has no 64-bit integers
        out_dtype = "int32"
    data = _to_typed_array(array) if encoding == "base64" else _to_lists(array)
    encoded = {"name": name, "dims": dims, "shape": list(array.shape), "dtype": out_dtype, "data": data}
    overflowed = nonfinite_count(array, masked=name.endswith("attn_scores"))
    if overflowed:  # only then: the key is absent from every finite answer
        encoded["nonfinite"] = overflowed
    return encoded


def nonfinite_count(array: np.ndarray, masked: bool = False) -> int:
    """How many cells are NaN or ±Inf that no mask put there (an overflow, a NaN from the model): both travel as
    null, like masked cells, so the count says they are not masks. `masked`: a stage where -inf means hidden."""
    if array.dtype.kind != "f":
        return 0
    bad = ~np.isfinite(array)
    if masked:
        bad &= ~np.isneginf(array)
    return int(bad.sum())


def decode_tensor(payload: dict[str, Any]) -> np.ndarray:
    """Inverse of encode_tensor (tests and the benchmark use it): masked cells come back as NaN."""
    data = payload["data"]
    if isinstance(data, dict):
        kinds = {"f4": "<f4", "f2": "<f2", "i4": "<i4"}
        flat = np.frombuffer(base64.b64decode(data["bdata"]), dtype=kinds[data["dtype"]])
        return flat.reshape(payload["shape"]).astype(np.float64)
    array = np.array(data, dtype=object)
    array[array == None] = np.nan  # noqa: E711 (elementwise comparison on an object array)
    return array.astype(np.float64).reshape(payload["shape"])
