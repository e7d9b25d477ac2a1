"""A real uvicorn server on a free loopback port, serving the shipped models (no minilm: faster to start)."""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from fastapi import FastAPI

from app.catalogue import build_registry
from app.factory import create_app
from app.server import server_options
from app.settings import Settings
from tests.conftest import free_port


class LiveServer:
    def __init__(self, app: FastAPI) -> None:
        self.app = app
        self.port = free_port()
        # served as `transformer-explorer serve` serves it: the guarded protocol, our access log (app.server)
        options = {**server_options(app.state.settings, "warning"), "host": "127.0.0.1", "port": self.port}
        self.server = uvicorn.Server(uvicorn.Config(app, **options))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def shipped_app(**changes: object) -> FastAPI:
    # the class database in a folder of its own (not the checkout's data/), new for every app
    base = {"load_minilm": False, "load_smollm2": False, "workers": 2, "queue_size": 64,
            "data_dir": Path(tempfile.mkdtemp(prefix="te-contract-"))}
    settings = Settings(**{**base, **changes})  # type: ignore[arg-type]
    return create_app(settings, build_registry(settings))


@pytest.fixture(scope="session")
def live() -> Iterator[LiveServer]:
    with LiveServer(shipped_app()) as server:
        yield server


ROOT = Path(__file__).resolve().parents[2]
