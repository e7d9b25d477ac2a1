"""Where the shipped weights and the training corpus live, and fixtures that load the shipped models."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from checkpoints import LoadedModel, load_checkpoint

ROOT = Path(__file__).resolve().parents[1]
WEIGHTS = ROOT / "model" / "weights"
CORPUS = ROOT.parent / "shared" / "corpus"


def load_shipped(name: str) -> LoadedModel:
    if not (WEIGHTS / name / "config.json").is_file():
        pytest.skip(f"{name} is not shipped in {WEIGHTS}")
    return load_checkpoint(WEIGHTS / name)


@pytest.fixture(scope="module")
def tiny_gpt() -> LoadedModel:
    return load_shipped("tiny-gpt")


@pytest.fixture(scope="module")
def translator() -> LoadedModel:
    return load_shipped("tiny-translator")


def free_port() -> int:
    """A loopback port nobody listens on now (for servers the tests start)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One headless Chromium for the whole run (tests/browser, tests/static_site): Playwright's sync API allows one
    instance a process."""
    from tests.browser.conftest import CHROMIUM, _sync_api

    with _sync_api().sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
        )
        yield b
        b.close()
