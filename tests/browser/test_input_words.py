"""Issue 41, item 4, in a real browser, in EN and ZH: the page says what happened to the input.

- a target typed without its leading space is refused with the suggestion (“␣paris”), by the panel's own label;
- a target of several tokens names its pieces in Chinese as in English;
- a number over its bound names the on-screen label ("New tokens"), never the field (`max_new_tokens`);
- a text over the limit is not cut by the page: the server refuses it whole, and the page says its length and
  the limit;
- a byte token reads as the character it spells (one function, static/js/shared/dom.js), never as <0xE5>.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.app.test_input_words import SENTENCE, bpe_decoder
from tests.browser.lab_page import idle, open_lab

LANGS = ("en", "zh")
ERROR = "#board-{panel} .lab-error"


@pytest.fixture(scope="module")
def words_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from tests.browser.models import ServerThread
    from tests.conftest import free_port

    server = ServerThread(free_port(), Path(tmp_path_factory.mktemp("words")))
    server.registry.add("bpe", bpe_decoder(), source="test")
    server.start()
    yield server
    server.stop()


@pytest.fixture()
def page(browser: Any) -> Iterator[Any]:
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.set_default_timeout(30000)
    errors: list[str] = []
    # the refusals asked for here are 422s, which Chromium logs as failed loads: every other error counts
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" and "status of 422" not in m.text
            else None)
    yield page
    assert not errors, errors
    page.close()


def panel_error(page: Any, panel: str) -> str:
    page.wait_for_selector(ERROR.format(panel=panel))
    idle(page)
    return page.inner_text(ERROR.format(panel=panel))


@pytest.mark.browser
@pytest.mark.parametrize("lang", LANGS)
def test_a_target_without_its_leading_space_is_refused_with_the_suggestion(page: Any, words_server: Any,
                                                                             lang: str) -> None:
    open_lab(page, words_server.url, panel="logit_attribution", model="bpe", text=SENTENCE, lang=lang,
             **{"logit_attribution.target": "paris"})
    said = panel_error(page, "logit_attribution")
    assert "“␣paris”" in said and "“paris”" in said, said
    assert ("target token" in said and "leading space" in said) if lang == "en" else \
        ("目标 Token" in said and "开头没有空格" in said), said


@pytest.mark.browser
@pytest.mark.parametrize("lang", LANGS)
def test_a_target_of_several_tokens_names_its_pieces_in_both_languages(page: Any, words_server: Any,
                                                                         lang: str) -> None:
    open_lab(page, words_server.url, panel="logit_attribution", model="bpe", text=SENTENCE, lang=lang,
             **{"logit_attribution.target": "berlin"})
    said = panel_error(page, "logit_attribution")
    assert "“b” + “e” + “r” + “l” + “i” + “n”" in said, said
    assert ("6 tokens" in said) if lang == "en" else ("6 个 Token" in said and "目标 Token" in said), said


@pytest.mark.browser
@pytest.mark.parametrize("lang", LANGS)
def test_a_number_over_its_bound_names_the_on_screen_label(page: Any, words_server: Any, lang: str) -> None:
    open_lab(page, words_server.url, panel="generation_tree", model="gpt", text="the cat", lang=lang,
             **{"generation_tree.steps": "40"})
    said = panel_error(page, "generation_tree")
    assert "max_new_tokens" not in said and "32" in said, said
    assert ("“New tokens” can be at most 32" in said) if lang == "en" else ("“新 Token 数”最多为 32" in said), said


@pytest.mark.browser
@pytest.mark.parametrize("lang", LANGS)
def test_a_long_text_is_not_cut_and_the_page_says_its_length_and_the_limit(page: Any, words_server: Any,
                                                                             lang: str) -> None:
    text = "the cat sat on the mat. " * 84  # 2,016 characters; the server's limit is 512
    open_lab(page, words_server.url, panel="logit_attribution", model="gpt", text="the cat", lang=lang)
    page.fill("#text", text)
    assert len(page.input_value("#text")) == 2016  # the field keeps every character (no maxlength cut)
    page.press("#text", "Enter")
    page.wait_for_selector("#message:not([hidden])")  # the page's message line: the last view stays
    said = page.inner_text("#message")
    assert "2,016" in said and "512" in said, said
    assert ("too long" in said) if lang == "en" else ("太长" in said and "没有截断" in said), said
    page.goto(f"{words_server.url}/?model=gpt&lang={lang}")
    page.wait_for_selector("body[data-ready='1']")
    page.fill("#text", text)
    assert len(page.input_value("#text")) == 2016
    page.press("#text", "Enter")
    page.wait_for_selector("#message:not([hidden])")
    message = page.inner_text("#message")
    assert "2,016" in message and "512" in message and ("Sentence" if lang == "en" else "句子") in message, message


@pytest.mark.browser
def test_byte_tokens_read_as_characters_everywhere(page: Any, words_server: Any) -> None:
    """The one naming function: a lone byte token (a target, an answer, a candidate), one with a space before
    it, and a text of joined byte tokens (a steering continuation) read as characters, as the generation
    tree's do."""
    open_lab(page, words_server.url, panel="logit_attribution", model="gpt", text="the cat", lang="zh")
    shown = page.evaluate("""async () => {
        const dom = await import('/static/js/shared/dom.js');
        return [dom.tokenText({text: '<0xE6><0x88><0x91>'}), dom.tokenText({text: ' <0xE5>'}),
                dom.readText('我<0xE7><0x88><0xB1>北<0xE4><0xBA>'),
                dom.tokenTexts([{text: '<0xE6><0x88>', start: 0, end: 1}, {text: '<0x91>', start: 0, end: 1}]),
                dom.tokenText({text: '<0x1C>'}),
                dom.tokenTexts([{text: ' of', start: 11, end: 14}, {text: ' <0xE6>', start: 14, end: 16},
                                {text: '<0xB3>', start: 15, end: 16}, {text: '<0x95>', start: 15, end: 16}])];
    }""")
    assert shown[0] == "我" and shown[1].startswith("␣") and "<0x" not in shown[1] and shown[1].endswith("1/3")
    assert shown[2].startswith("我爱北") and "<0x" not in shown[2] and shown[2].endswith("1–2/3"), shown
    assert shown[3] == ["我 1–2/3", "我 3/3"], shown
    assert shown[4] == "<0x1C>"  # a control character would show as nothing: its byte's name stays
    # SmolLM2's " 法": a space with the first byte, then two byte tokens: one character, as the chips show it
    assert shown[5] == ["␣of", "␣法 1/3", "法 2/3", "法 3/3"], shown
    # a target that is byte pieces: the refusal names them as the generation tree does
    open_lab(page, words_server.url, panel="logit_attribution", model="bpe", text=SENTENCE, lang="zh",
             **{"logit_attribution.target": "我"})
    said = panel_error(page, "logit_attribution")
    assert "“我 1/3” + “我 2/3” + “我 3/3”" in said and "<0x" not in said, said


@pytest.mark.browser
@pytest.mark.parametrize("lang", LANGS)
def test_a_position_past_the_sentence_says_how_many_there_are(page: Any, words_server: Any, lang: str) -> None:
    open_lab(page, words_server.url, panel="logit_attribution", model="gpt", text="the cat", lang=lang,
             **{"logit_attribution.position": "40"})
    said = panel_error(page, "logit_attribution")
    assert ("Position 40 does not exist" in said) if lang == "en" else ("位置 40 不存在" in said), said
    assert "0" in said and "7" in said, said
