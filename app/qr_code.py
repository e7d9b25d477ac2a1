"""QR codes drawn on this machine (segno, pure Python): a class's join link and a chapter's share card need one
on an offline projector, so no QR service is ever asked."""

from __future__ import annotations

import io

import segno

# A QR code holds at most a few thousand characters; a link longer than this is a mistake, not a card.
MAX_QR_TEXT = 1024


def qr_svg(text: str, *, scale: int = 4) -> str:
    """An SVG of `text` as a QR code (error correction M: readable from the back of a classroom off a projector).

    Raises ValueError for an empty text or one over MAX_QR_TEXT characters."""
    if not text or len(text) > MAX_QR_TEXT:
        raise ValueError(f"a QR code holds 1 to {MAX_QR_TEXT} characters; this text has {len(text)}")
    code = segno.make(text, error="m", micro=False)
    out = io.BytesIO()
    code.save(out, kind="svg", scale=scale, border=2, xmldecl=False, svgns=True, title=None)
    return out.getvalue().decode("ascii")
