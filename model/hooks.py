"""Identity hook points and the trace that records them.

Every stage of the forward pass goes through a `HookPoint`, an identity module that
knows its stable name and the names of its tensor's dimensions. Nothing is attached to
the modules: entering a `Trace` sets it as the active trace (a context variable), and every
hook point, on every forward pass, checks that variable and records its tensor only when the
active trace wants its name. Nothing is stored without a trace, and asking for one layer's
attention costs the memory of that layer alone.
Recording keeps a reference (no copy): the model never modifies a tensor in place,
so recording cannot change any output.

A trace may also carry edits (TransformerLens-style hooks): name -> fn(value, trace) that
returns the value the forward pass continues with. They live on the trace, never on the
modules, so an edit changes one call and nothing else; `model/edits.py` builds the
named experiments (no scaling, no mask, ablated heads, ...) from them.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING

import torch
from torch import nn

if TYPE_CHECKING:
    NamesFilter = Iterable[str] | Callable[[str], bool] | None
    Edit = Callable[[torch.Tensor, "Trace"], torch.Tensor]
else:
    NamesFilter = object
    Edit = object


# The trace being recorded by the current thread / task. A context variable rather than
# state on the modules, so concurrent requests on one shared model never mix traces.
_active_trace: ContextVar[Trace | None] = ContextVar("active_trace", default=None)


class HookPoint(nn.Module):
    """Identity on the forward pass; hands its input to the active trace if it asked for it."""

    def __init__(self, dims: tuple[str, ...]) -> None:
        super().__init__()
        self.dims = dims
        self.name = ""  # set by the owning Transformer from the module tree

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        trace = _active_trace.get()
        if trace is None:
            return x
        for edit in trace.edits.get(self.name, ()):
            x = edit(x, trace)  # the value the rest of this call sees (and the trace records)
        if self.name in trace.wanted:
            trace.record(self.name, self.dims, x)
        return x

    def extra_repr(self) -> str:
        return f"dims={list(self.dims)}"


class Trace(Mapping[str, torch.Tensor]):
    """Name -> tensor for the stages one forward pass went through, in execution order."""

    def __init__(self, wanted: Iterable[str], edits: Mapping[str, Sequence[Edit]] | None = None) -> None:
        self.edits: Mapping[str, Sequence[Edit]] = edits or {}
        self.wanted = frozenset(wanted)
        self.tensors: dict[str, torch.Tensor] = {}
        self.dims: dict[str, tuple[str, ...]] = {}

    def __enter__(self) -> Trace:
        self._token = _active_trace.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _active_trace.reset(self._token)

    def record(self, name: str, dims: tuple[str, ...], tensor: torch.Tensor) -> None:
        # detach only what autograd tracks: under inference mode (every traced call) nothing is,
        # and a detached view per stage cost ~2 us x 100 stages
        self.tensors[name] = tensor.detach() if tensor.requires_grad else tensor
        self.dims[name] = dims

    def __getitem__(self, name: str) -> torch.Tensor:
        return self.tensors[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.tensors)

    def __len__(self) -> int:
        return len(self.tensors)

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.tensors.values())


class NoSuchStage(KeyError):
    """A pattern that matches no stage; `index` is its place in the filter (an API points at it by index)."""

    def __init__(self, pattern: str, index: int) -> None:
        super().__init__(f"no trace stage matches {pattern!r}")
        self.index = index


def select_names(all_names: list[str], names: NamesFilter) -> list[str]:
    """Resolve a names filter to hook names, keeping the model's order.

    A filter is None (everything), a callable on the name, or an iterable of exact
    names and shell-style patterns (``blocks.0.attn.*``). A pattern that matches
    nothing is an error, so a typo never silently returns an empty trace.
    """
    if names is None:
        return list(all_names)
    if callable(names):
        return [n for n in all_names if names(n)]
    wanted = [names] if isinstance(names, str) else list(names)
    chosen: set[str] = set()
    for index, pattern in enumerate(wanted):
        if any(c in pattern for c in "*?["):
            matches = matching(all_names, pattern)
        else:
            matches = [pattern] if pattern in all_names else []
        if not matches:
            raise NoSuchStage(pattern, index)
        chosen.update(matches)
    return [n for n in all_names if n in chosen]


def matching(all_names: list[str], pattern: str) -> list[str]:
    """Names matching a shell-style pattern. fnmatch.filter would keep every pattern it ever compiled (up to
    32,768 of them, a server's memory that clients choose); `re` keeps a few hundred."""
    regex = re.compile(fnmatch.translate(pattern))
    return [name for name in all_names if regex.match(name)]
