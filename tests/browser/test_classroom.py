"""A class played in Chromium: one teacher and three students, each in a browser context of their own (separate
cookies), in English and in Chinese: join, follow the teacher's question live, answer, reveal, CSV, end."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.browser

ANSWERS = {"Ana": "it", "Bo": "it", "<Ana>": None, "Ana ": "street"}  # "<Ana>" is refused; "Ana " becomes "Ana (2)"
WORDS = {"en": {"answered": "3 of 3 answered", "ended": "The class has ended"},
         "zh": {"answered": "3 人中已有 3 人作答", "ended": "本堂课已结束"}}


def watch(page: Any, errors: list[str]) -> Any:
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" and "status of 4" not in m.text else None)
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    page.set_default_timeout(15000)
    return page


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_teacher_and_three_students(browser: Any, server: Any, lang: str, tmp_path: Path) -> None:
    errors: list[str] = []
    contexts = [browser.new_context(viewport={"width": 1280, "height": 720}, accept_downloads=True) for _ in range(4)]
    try:
        teacher = watch(contexts[0].new_page(), errors)
        teacher.goto(f"{server.url}/class/teach?lang={lang}")
        teacher.click("#start")
        teacher.wait_for_function("() => document.getElementById('code').textContent.length === 6")
        code = teacher.locator("#code").inner_text()
        assert re.fullmatch(r"[2-9A-HJKMNP-Z]{6}", code), code
        assert teacher.locator("#qr").evaluate("img => img.complete && img.naturalWidth > 0")
        assert "#key=" not in teacher.url  # the key is no longer on screen

        students = []
        for context, nickname in zip(contexts[1:], ["Ana", "Bo", "Ana "], strict=True):
            page = watch(context.new_page(), errors)
            page.goto(f"{server.url}/class?code={code}&lang={lang}")
            if nickname == "Ana ":  # a nickname with markup is refused with a message in the page's language
                page.fill("#nickname", "<b>Ana</b>")
                page.click("#join")
                assert "<" in page.locator("#class-message").inner_text()
            page.fill("#nickname", nickname)
            page.click("#join")
            page.wait_for_selector("#class-joined:not([hidden])")
            students.append(page)
        assert "Ana (2)" in students[2].locator("#hello").inner_text()

        teacher.select_option("#chapter", "qkv")
        teacher.fill("#question", "q1")
        teacher.click("#step-form button[type=submit]")
        for page in students:  # every page follows, live
            page.wait_for_selector("#answer-form:not([hidden])")
            assert "q1" in page.locator("#asked").inner_text()

        for page, value in zip(students, ["it", "it", "street"], strict=True):
            page.fill("#answer", value)
            page.click("#send")
            page.wait_for_function("() => document.getElementById('mine').textContent.length > 0")
        teacher.wait_for_function(f"() => document.getElementById('answered').textContent"
                                  f".includes({WORDS[lang]['answered']!r})")
        labels = teacher.locator(".class-bar-label").all_inner_texts()
        assert labels == ["it", "street"], labels  # values and counts only, no names
        projected = teacher.locator("#class-running").inner_text()
        assert "Ana" not in projected.replace(teacher.locator("#teacher-link").inner_text(), "")

        teacher.click("#reveal")
        for page in students:
            page.wait_for_selector(".class-bar")
            assert page.locator(".class-bar-label").all_inner_texts() == ["it", "street"]
            assert page.locator("#answer-form").is_hidden()

        with teacher.expect_download() as download:
            teacher.click("#csv")
        csv = Path(download.value.path()).read_text(encoding="utf-8-sig")
        lines = csv.strip().splitlines()
        assert len(lines) == 4 and {'"Ana"', '"Bo"', '"Ana (2)"'} == {line.split(",")[0] for line in lines[1:]}

        teacher.click("#end")
        teacher.click("#end")
        teacher.wait_for_selector("#class-start:not([hidden])")
        for page in students:
            page.wait_for_function(f"() => document.getElementById('class-message').textContent"
                                   f".includes({WORDS[lang]['ended']!r})")
        assert not errors, errors
    finally:
        for context in contexts:
            context.close()
