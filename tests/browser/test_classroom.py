"""A class played in Chromium: one teacher and three students, each in a browser context of their own (separate
cookies), in English and in Chinese: join, follow the teacher's question live, answer, reveal, CSV, end."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def class_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The browser tests' server with the shipped models too: chapter "scale" is measured on tiny-gpt."""
    from tests.browser.models import ServerThread
    from tests.conftest import free_port

    srv = ServerThread(free_port(), tmp_path_factory.mktemp("classroom"), extra_models=True).start()
    yield srv
    srv.stop()

ANSWERS = {"Ana": "it", "Bo": "it", "<Ana>": None, "Ana ": "street"}  # "<Ana>" is refused; "Ana " becomes "Ana (2)"
WORDS = {"en": {"answered": "3 of 3 answered", "ended": "The class has ended"},
         "zh": {"answered": "3 人中已有 3 人作答", "ended": "本堂课已结束"}}


def watch(page: Any, errors: list[str]) -> Any:
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" and "status of 4" not in m.text else None)
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    page.set_default_timeout(15000)
    return page


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_teacher_and_three_students(browser: Any, class_server: Any, lang: str) -> None:
    server = class_server
    lesson = httpx.get(f"{server.url}/api/lessons/scale/questions?lang={lang}&question=unscaled_peak").json()
    right = lesson["questions"][0]["answer"]  # "up" or "down", measured on the chapter's view in this language
    wrong = "down" if right == "up" else "up"
    errors: list[str] = []
    contexts = [browser.new_context(viewport={"width": 1280, "height": 720}, accept_downloads=True) for _ in range(4)]
    try:
        teacher = watch(contexts[0].new_page(), errors)
        teacher.goto(f"{server.url}/class/teach?lang={lang}")
        teacher.click("#start")
        teacher.wait_for_function("() => document.getElementById('code').textContent.length === 6")
        code = teacher.locator("#code").inner_text()
        assert re.fullmatch(r"[2-9A-HJKMNP-Z]{6}", code), code
        teacher.wait_for_function("() => { const img = document.getElementById('qr'); "
                                  "return img.complete && img.naturalWidth > 0; }")  # the QR code drawn
        assert "#key=" not in teacher.url  # the key is no longer on screen

        students = []
        for context, nickname in zip(contexts[1:], ["Ana", "Bo", "Ana "], strict=True):
            page = watch(context.new_page(), errors)
            page.goto(f"{server.url}/class?code={code}&lang={lang}")
            if nickname == "Ana ":  # a nickname with markup is refused with a message in the page's language
                page.fill("#nickname", "<b>Ana</b>")
                page.click("#join")
                page.wait_for_selector("#class-message:not([hidden])")
                assert "<" in page.locator("#class-message").inner_text()
            page.fill("#nickname", nickname)
            page.click("#join")
            page.wait_for_selector("#class-joined:not([hidden])")
            students.append(page)
        assert "Ana (2)" in students[2].locator("#hello").inner_text()

        teacher.select_option("#chapter", "scale")
        teacher.wait_for_selector("#question option[value=unscaled_peak]", state="attached")
        teacher.click("#ask")
        teacher.wait_for_function("() => document.querySelector('#prompt .class-prompt')")
        prompt = lesson["questions"][0]["prompt"]
        assert teacher.locator("#prompt").inner_text().strip() == prompt
        for page in students:  # every page follows, live, and shows the question's own prompt and options
            page.wait_for_selector("#answer-form:not([hidden]) .class-choice")
            assert page.locator("#prompt").inner_text().strip() == prompt

        for page, value in zip(students, [right, right, wrong], strict=True):
            page.click(f".class-choice[data-value={value}]")
            page.wait_for_selector(".class-choice.chosen")
        teacher.wait_for_function(f"() => document.getElementById('answered').textContent"
                                  f".includes({WORDS[lang]['answered']!r})")
        labels = teacher.locator(".class-bar-label").all_inner_texts()
        options = {o["value"]: o["label"] for o in lesson["questions"][0]["options"]}
        assert labels == [options[right], options[wrong]], labels  # values and counts only, no names
        projected = teacher.locator("#class-running").inner_text()
        assert "Ana" not in projected.replace(teacher.locator("#teacher-link").inner_text(), "")

        teacher.click("#reveal")
        verdicts = {"en": ("(right)", "(wrong)"), "zh": ("(对)", "(错)")}[lang]
        for page, verdict in zip(students, [verdicts[0], verdicts[0], verdicts[1]], strict=True):
            page.wait_for_selector(".class-bar.right")
            assert page.locator(".class-bar-label").all_inner_texts() == [options[right], options[wrong]]
            assert page.locator("#answer-form").is_hidden()
            assert page.locator("#mine").inner_text().endswith(verdict)  # checked on the lesson's numbers
            assert lesson["questions"][0]["why"] in page.locator("#prompt").inner_text()

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
