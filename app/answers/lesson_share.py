"""GET /api/lessons/{chapter}/share: a chapter's share card, its link on this server and that link as a QR code.

The QR code is drawn here (app/qr_code.py, segno), never by a QR service: a classroom projector may be offline.
The link is built from the address the page was opened at (the request's base URL), so a teacher who opened the
explorer at the machine's network address gets a code a student's phone on the same network can open.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from app import errors
from app.qr_code import qr_svg
from lessons import chapters as lessons


def share_card(chapter_id: str, lang: str, base_url: str) -> dict[str, Any]:
    """The chapter (by id, or by number from 1), its link in `lang` under `base_url` and the link's QR code (SVG):
    404 for a chapter there is none of; 422 for an address too long to be a QR code."""
    found = lessons.find(chapter_id)
    if found is None:
        raise errors.unknown_chapter([c.id for c in lessons.chapters()])
    number, chapter = found
    link = f"{base_url}?{urlencode({'chapter': chapter.id, 'lang': lang})}"
    try:
        svg = qr_svg(link)
    except ValueError as error:  # a Host header of hundreds of characters: no card, and a word why
        raise errors.invalid_request(f"This page's address is too long for a QR code: {error}.") from error
    return {"chapter": chapter.id, "number": number + 1, "lang": lang, "link": link, "svg": svg}
