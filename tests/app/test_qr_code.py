"""The local QR encoder: the symbol is the size its version says, and bad lengths are refused."""

import re

import pytest
import segno

from app.qr_code import MAX_QR_TEXT, qr_svg


def test_svg_is_the_symbol_of_the_text() -> None:
    text = "http://192.168.1.5:8000/class/ABC123"
    svg = qr_svg(text, scale=4)
    side = segno.make(text, error="m", micro=False).symbol_size(scale=4, border=2)
    assert re.search(rf'width="{side[0]}" height="{side[1]}"', svg)
    assert svg.startswith("<svg") and "<path" in svg


@pytest.mark.parametrize("text", ["", "x" * (MAX_QR_TEXT + 1)])
def test_bad_lengths_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="QR code holds"):
        qr_svg(text)
