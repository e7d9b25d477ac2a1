"""Screenshots of a class at 1280×720, EN and ZH, for docs/TEACHERS.md: the teacher's view on the projector while
answers come in, and a student's page after the reveal.

    python -m tests.browser.class_screenshots http://127.0.0.1:8000   (a running server with the shipped weights)

Each PNG is reduced to a 256-colour palette so the set stays small in the repository.
"""

from __future__ import annotations

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

from tests.browser.chapter_screenshots import save
from tests.browser.conftest import CHROMIUM

OUT = Path(__file__).resolve().parents[2] / "docs" / "images" / "class"
NICKNAMES = {"en": ["Ana", "Bo", "Cy", "Dee"], "zh": ["小明", "小红", "小刚", "小丽"]}


def main(base: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM)
        for lang in ("en", "zh"):
            contexts = [browser.new_context(viewport={"width": 1280, "height": 720}) for _ in range(5)]
            teacher = contexts[0].new_page()
            teacher.goto(f"{base}/class/teach?lang={lang}")
            teacher.click("#start")
            teacher.wait_for_function("() => document.getElementById('code').textContent.length === 6")
            code = teacher.locator("#code").inner_text()
            students = []
            for context, nickname in zip(contexts[1:], NICKNAMES[lang], strict=True):
                page = context.new_page()
                page.goto(f"{base}/class?code={code}&lang={lang}")
                page.fill("#nickname", nickname)
                page.click("#join")
                page.wait_for_selector("#class-joined:not([hidden])")
                students.append(page)
            teacher.select_option("#chapter", "scale")
            teacher.wait_for_selector("#question option[value=unscaled_peak]", state="attached")
            teacher.click("#ask")
            for page, value in zip(students[:3], ["up", "up", "down"], strict=True):
                page.wait_for_selector(".class-choice")
                page.click(f".class-choice[data-value={value}]")
                page.wait_for_selector(".class-choice.chosen")
            teacher.wait_for_function("() => document.querySelectorAll('.class-bar').length === 2")
            teacher.wait_for_timeout(300)
            save(teacher, OUT / f"teacher.{lang}.png")
            teacher.click("#reveal")
            students[0].wait_for_selector(".class-bar.right")
            save(students[0], OUT / f"student.{lang}.png")
            teacher.click("#end")
            teacher.click("#end")
            for context in contexts:
                context.close()
        browser.close()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000")
