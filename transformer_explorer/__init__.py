"""Transformer Explorer's entry points, above every other package (it may import them all; none imports it).

    cli.py       `transformer-explorer serve|train|heads|export-site` (pyproject's [project.scripts]) and
                 `python -m transformer_explorer` (__main__.py): parses the command line and starts app,
                 training or static_site, each lazily
    api.py       the Python API's methods (issue 44), shared by
    explorer.py  Explorer: the API in process, no server (the server's own Service and endpoint records)
    client.py    Client: the same methods against a running server over HTTP (standard library only)
    results.py   what they return: dataclasses of numpy arrays with named dims; ExplorerError
    widget.py    show(result): the page's own panels drawn offline in a notebook

    from transformer_explorer import Explorer, show
    tiny = Explorer("tiny-gpt")
    trace = tiny.trace("The cat sat on the mat.", ["blocks.0.attn.hook_pattern"])

Importing the package loads nothing: each name is imported when first used (the command line never loads torch
for `--help`).
"""

from __future__ import annotations

from typing import Any

_NAMES = {"Explorer": "explorer", "Client": "client", "ExplorerError": "results", "show": "widget",
          "widget_html": "widget"}
__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    if name not in _NAMES:
        raise AttributeError(f"module 'transformer_explorer' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"transformer_explorer.{_NAMES[name]}"), name)
