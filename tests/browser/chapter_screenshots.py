"""Screenshots of every lesson chapter in presentation mode at 1280×720, EN and ZH, with the explanation closed and
open (E: `…-E.png`), for docs/images/chapters.

    python -m tests.browser.chapter_screenshots http://127.0.0.1:8000   (a running server with the shipped weights)

Each PNG is reduced to a 128-colour palette so the set stays small in the repository.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

from PIL import Image
from playwright.sync_api import sync_playwright

from tests.browser.conftest import CHROMIUM
from tests.browser.teach_models import CHAPTER_IDS

OUT = Path(__file__).resolve().parents[2] / "docs" / "images" / "chapters"


def save(page: Any, path: Path) -> None:
    shot = Image.open(io.BytesIO(page.screenshot())).convert("RGB")
    shot.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)


def main(base: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        for lang in ("en", "zh"):
            for n, cid in enumerate(CHAPTER_IDS, start=1):
                page.goto(f"{base}/?chapter={cid}&lang={lang}&present=1")
                page.wait_for_selector("body[data-ready='1']", timeout=180000)
                page.wait_for_function("() => !document.body.classList.contains('busy')", timeout=180000)
                page.wait_for_timeout(300)
                save(page, OUT / f"{n:02d}-{cid}-{lang}.png")
                # E: the chapter text and the explanation beside the chart
                before = page.get_attribute("#stage", "data-rendered")
                page.keyboard.press("e")
                page.wait_for_function("(b) => document.querySelector('#stage').dataset.rendered !== b", arg=before)
                page.wait_for_function("() => !document.body.classList.contains('busy')", timeout=180000)
                page.wait_for_timeout(300)
                save(page, OUT / f"{n:02d}-{cid}-{lang}-E.png")
        browser.close()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000")
