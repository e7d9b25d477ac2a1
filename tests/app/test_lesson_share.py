"""A chapter's share card (GET /api/lessons/{chapter}/share): the link on the address the page was opened at, in
the page's language, and a QR code of exactly that link, drawn on the server."""

from __future__ import annotations

import re

import segno
from fastapi.testclient import TestClient

from app.qr_code import qr_svg
from lessons.chapters import chapters
from tests.app.conftest import error_of


def test_the_card_links_to_the_chapter_on_this_address(client: TestClient) -> None:
    number = 3
    chapter = chapters()[number - 1].id
    response = client.get(f"/api/lessons/{number}/share?lang=zh", headers={"host": "192.168.1.5:8000"})
    assert response.status_code == 200, response.text
    card = response.json()
    assert card["chapter"] == chapter and card["number"] == number and card["lang"] == "zh"
    assert card["link"] == f"http://192.168.1.5:8000/?chapter={chapter}&lang=zh"
    # the QR code is the link's own symbol, at the size its version gives
    assert card["svg"] == qr_svg(card["link"])
    side = segno.make(card["link"], error="m", micro=False).symbol_size(scale=4, border=2)
    assert re.search(rf'width="{side[0]}" height="{side[1]}"', card["svg"])


def test_an_unknown_chapter_is_refused_by_name(client: TestClient) -> None:
    status, code, message = error_of(client.get("/api/lessons/no-such-chapter/share"))
    assert (status, code) == (404, "unknown_chapter")
    assert chapters()[0].id in message


def test_a_language_the_pages_lack_is_a_422(client: TestClient) -> None:
    assert client.get(f"/api/lessons/{chapters()[0].id}/share?lang=fr").status_code == 422
