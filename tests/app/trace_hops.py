"""How many function hops a first POST /api/trace takes through the project's own files.

A profiler (sys.setprofile, in every thread) sees each Python call. A *hop* is the first call of a
function frame whose code lies in the project (app/, model/, analysis/, lab/, checkpoints/);
resuming a coroutine is not a new hop. A file is *entered* when a hop comes from another file.
The model's forward pass itself (model/ called from model/) is counted apart: it is the model,
not the route to it.

    PYTHONPATH=. python -m tests.app.trace_hops      # prints the hops of one first trace
"""

from __future__ import annotations

import json
import tempfile
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from fastapi.testclient import TestClient

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("app", "model", "analysis", "lab", "checkpoints")


@dataclass
class Hops:
    calls: list[str] = field(default_factory=list)  # "file:function", in order, outside the forward pass
    entered: Counter[str] = field(default_factory=Counter)  # file -> times entered from another file
    forward_calls: int = 0  # model/ -> model/ calls (the forward pass)

    @property
    def files(self) -> set[str]:
        return {c.split(":")[0] for c in self.calls}


def project_file(frame: FrameType) -> str | None:
    path = Path(frame.f_code.co_filename)
    try:
        rel = path.resolve().relative_to(ROOT)
    except ValueError:
        return None
    return rel.as_posix() if rel.parts[0] in PACKAGES else None


class Profiler:
    """Installed in every thread before the app starts (threads take it when they start); counts only while on."""

    def __init__(self) -> None:
        self.on = False
        self.hops = Hops()
        self.seen: set[int] = set()
        self.frames: list[FrameType] = []  # kept alive so that no frame id is reused

    def __call__(self, frame: FrameType, event: str, _: Any) -> None:
        if not self.on or event != "call" or id(frame) in self.seen:
            return
        self.seen.add(id(frame))
        self.frames.append(frame)
        file = project_file(frame)
        if file is None:
            return
        hops = self.hops
        caller = frame.f_back
        caller_file = project_file(caller) if caller is not None else None
        if file.startswith("model/") and nearest_project_file(caller).startswith("model/"):
            hops.forward_calls += 1  # torch's Module.__call__ stands between model/ files
            return
        name = frame.f_code.co_name
        if name.startswith("<") and name != "<lambda>":  # comprehensions and generator expressions
            return
        hops.calls.append(f"{file}:{name}")
        if caller_file != file:
            hops.entered[file] += 1


def nearest_project_file(frame: FrameType | None) -> str:
    while frame is not None:
        file = project_file(frame)
        if file is not None:
            return file
        frame = frame.f_back
    return ""


def measure(body: dict[str, Any]) -> Hops:
    """A fresh app (tiny models of tests/app/conftest.py); its first POST /api/trace, under the profiler."""
    from app.factory import create_app
    from tests.app.conftest import make_registry, make_settings

    profiler = Profiler()
    threading.setprofile(profiler)
    try:
        app = create_app(make_settings(Path(tempfile.mkdtemp())), make_registry())
        with TestClient(app) as client:
            profiler.on = True
            response = client.post("/api/trace", content=json.dumps(body),
                                   headers={"content-type": "application/json"})
            profiler.on = False
    finally:
        threading.setprofile(None)  # type: ignore[arg-type]
    assert response.status_code == 200, response.text
    return profiler.hops


FIRST_TRACE = {"model": "gpt", "text": "the cat sat on", "stages": ["blocks.0.attn.hook_pattern"]}


def main() -> None:
    hops = measure(FIRST_TRACE)
    for call in hops.calls:
        print(call)
    print(f"\n{len(hops.calls)} calls of {len(set(hops.calls))} functions in {len(hops.files)} files "
          f"(+ {hops.forward_calls} calls inside model/)")
    for file, n in hops.entered.most_common():
        print(f"  entered {n}x  {file}")


if __name__ == "__main__":
    main()
