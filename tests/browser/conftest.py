"""Browser tests: a real uvicorn server with tiny seeded models, driven by Debian's headless Chromium."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

HAVE_CHROMIUM = os.path.exists(CHROMIUM)


def _sync_api() -> Any:
    """Playwright, or a skip on machines without it or without a browser (test_text_data.py still runs)."""
    if not HAVE_CHROMIUM:  # pragma: no cover - machines without a browser
        pytest.skip(f"{CHROMIUM} is missing")
    return pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    _sync_api()
    from tests.browser.models import ServerThread
    from tests.conftest import free_port

    srv = ServerThread(free_port(), tmp_path_factory.mktemp("browser")).start()
    yield srv
    srv.stop()


# `browser` (one Chromium for the whole run: Playwright allows one sync instance a process) is in tests/conftest.py


@pytest.fixture(scope="session")
def context(browser: Any) -> Iterator[Any]:
    """One context for the session, so plotly.min.js (cached for a day) is fetched once."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    yield ctx
    ctx.close()


class Watched:
    """A page plus what it reported: console errors, uncaught exceptions, dialogs."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))

        def on_dialog(dialog: Any) -> None:
            self.dialogs.append(dialog.message)
            dialog.dismiss()

        page.on("dialog", on_dialog)


@pytest.fixture()
def watched(context: Any) -> Iterator[Watched]:
    page = context.new_page()
    page.set_default_timeout(15000)
    yield Watched(page)
    page.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
