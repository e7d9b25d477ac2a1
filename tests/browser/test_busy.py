"""A class presses Enter at once: a server with a full queue answers 503 + Retry-After, and the page
waits that long and asks again (twice) before it tells the student the server is busy."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.browser.helpers import open_page, run_text

pytestmark = pytest.mark.browser

BUSY = {"status": 503, "content_type": "application/json", "headers": {"Retry-After": "1"},
        "body": json.dumps({"error": {"code": "busy", "message": "busy"}})}


def test_always_busy_three_attempts_then_the_message(watched: Any, server: Any) -> None:
    page = watched.page
    open_page(page, server.url, model="gpt", text="the first sentence", stage="softmax", layer=0)
    attempts: list[str] = []

    def busy(route: Any) -> None:
        attempts.append(route.request.url)
        route.fulfill(**BUSY)

    page.route("**/api/**", busy)
    run_text(page, "a new sentence")
    assert "server is busy" in page.inner_text("#message").lower() or "服务器正忙" in page.inner_text("#message")
    assert len(attempts) == 3 and len(set(attempts)) == 1, attempts  # one request, asked three times
    page.unroute("**/api/**")


def test_busy_once_the_student_sees_the_answer(watched: Any, server: Any) -> None:
    page = watched.page
    open_page(page, server.url, model="gpt", text="the first sentence", stage="softmax", layer=0)
    refused: list[str] = []

    def busy_once(route: Any) -> None:
        if refused:
            route.continue_()
            return
        refused.append(route.request.url)
        route.fulfill(**BUSY)

    page.route("**/api/**", busy_once)
    run_text(page, "a sentence that waits its turn")
    assert refused, "the route saw no request"
    assert page.locator("#message").is_hidden() or "busy" not in page.inner_text("#message").lower()
    assert page.get_attribute("#stage", "data-stage") == "softmax"
    assert page.locator("#panel .plot .main-svg").count() >= 1
    page.unroute("**/api/**")
