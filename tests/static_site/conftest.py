"""The browser tests' fixtures (a server on the tiny test models, Chromium), for the site's browser tests.

Imported here rather than shared with tests/browser: recording a site runs an app's startup and shutdown, and
with the browser tests' own session server that left later browser tests answered with 500s. This directory
gets a server of its own (the one Chromium is tests/conftest.py's).
"""

from tests.browser.conftest import artifacts, context, server, watched

__all__ = ["artifacts", "context", "server", "watched"]
