"""The positional-encoding family in /lab's positions panel, in a real browser: the table shows the
numbers of the members' meta (EN and ZH), the learned member says why it has no number at twice the
context, each model name opens the explorer on that model, the model choosers group the family
after the other models, the shuffle demo shuffles; with no member served there is no table at all."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from tests.browser.lab_page import idle, open_lab
from tests.browser.pe_models import CONTEXT, TABLE, write_pe_family

TEXT = "the cat sat on a mat"
GROUP = {"en": "positional-encoding family", "zh": "位置编码对照组"}
CANNOT = {"en": f"cannot: no position vector past row {CONTEXT}", "zh": f"无法计算：第 {CONTEXT} 行之后没有位置向量"}
RENDERED_AGAIN = "(b) => document.querySelector('#panel-positions').dataset.rendered !== b"


def small(value: float) -> str:
    """The page's format for a change: 0, tiny ones as 3.2e-5, else 3 decimals."""
    if value == 0:
        return "0"
    if abs(value) < 0.001:
        mantissa, exponent = f"{value:.1e}".split("e")
        return f"{mantissa}e{int(exponent)}"
    return f"{value:.3f}"


@pytest.fixture(scope="module")
def pe_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from app.catalogue import add_directory
    from tests.browser.models import ServerThread
    from tests.conftest import free_port

    tmp = tmp_path_factory.mktemp("pe-family")
    srv = ServerThread(free_port(), tmp)
    for name, directory in write_pe_family(tmp / "weights").items():
        add_directory(srv.registry, name, directory, source="weights")
    srv.start()
    yield srv
    srv.stop()


def cells(row: Any) -> dict[str, str]:
    return row.evaluate("""tr => Object.fromEntries([...tr.querySelectorAll('td[data-col]')]
        .map(td => [td.dataset.col, td.textContent]))""")


def grouped_options(page: Any) -> tuple[list[str], dict[str, list[str]]]:
    """The model chooser: the options outside any group, and each <optgroup>'s label -> its options."""
    return page.eval_on_selector("#model", """s => [
        [...s.children].filter(c => c.tagName === 'OPTION').map(o => o.value),
        Object.fromEntries([...s.querySelectorAll('optgroup')]
            .map(g => [g.label, [...g.children].map(o => o.value)]))]""")


@pytest.mark.browser
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_table_shows_the_meta_numbers(watched: Any, pe_server: Any, lang: str) -> None:
    page = watched.page
    open_lab(page, pe_server.url, model="gpt", text=TEXT, lang=lang, panel="positions")
    rows = page.locator("#board-positions .pe-table tbody tr")
    shown_models = [rows.nth(i).get_attribute("data-model") for i in range(rows.count())]
    assert shown_models == [r["model"] for r in TABLE["members"]]
    for i, member in enumerate(TABLE["members"]):
        shown = cells(rows.nth(i))
        bpc, shuffle = member["bits_per_character"], member["shuffle"]
        assert (shown["bpc-en"], shown["bpc-zh"]) == (f"{bpc['en']:.3f}", f"{bpc['zh']:.3f}"), member["model"]
        if member["bits_per_character_2x"] is None:
            # the learned table has no row past the trained context: a reason, and no number
            assert shown["bpc2"] == CANNOT[lang]
            assert "bpc2-en" not in shown and "bpc2-zh" not in shown
            assert not re.search(r"\d\.\d", shown["bpc2"])
        else:
            double = member["bits_per_character_2x"]
            assert (shown["bpc2-en"], shown["bpc2-zh"]) == (f"{double['en']:.3f}", f"{double['zh']:.3f}")
        assert shown["first"] == small(shuffle["first_layer_change"])
        assert shown["last"] == small(shuffle["last_token_change"])
        assert shown["bits"] == f"{shuffle['bits_per_token_original']:.3f} → {shuffle['bits_per_token_shuffled']:.3f}"
    assert cells(rows.nth(3))["first"] == "3.2e-5" and cells(rows.nth(5))["last"] == "4.2e-4"  # tiny: scientific
    notes = page.inner_text("#board-positions .pe-family")
    if lang == "en":
        assert "The table reads 0 for it" in notes and "its last-token change reads 0.031" in notes
        assert "moved most for pe-sinusoidal (2.222 → 2.988) and least for pe-alibi (2.111 → 2.110)" in notes
        assert "Lowest bits per character at 32 tokens: pe-rope in English (2.099), pe-rope in Chinese (5.876)" in notes
    else:
        assert "表中它的这一项是 0" in notes and "最后一个 Token 的变化是 0.031" in notes
        assert "变化最大的是 pe-sinusoidal（2.222 → 2.988），最小的是 pe-alibi（2.111 → 2.110）" in notes
    shown = page.inner_text("#panel-positions")
    assert not re.search(r"⟦|undefined|NaN|\{\w+\}", shown), shown[:400]
    # the chooser: the lone models first, the family in one group, the default still chosen
    lone, groups = grouped_options(page)
    assert lone[0] == "gpt" and not any(name.startswith("pe-") for name in lone)
    assert groups == {GROUP[lang]: [r["model"] for r in TABLE["members"]]}
    assert page.input_value("#model") == "gpt"
    assert watched.errors == []


@pytest.mark.browser
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_model_name_opens_the_explorer_on_it(watched: Any, pe_server: Any, lang: str) -> None:
    page = watched.page
    open_lab(page, pe_server.url, model="gpt", text=TEXT, lang=lang, panel="positions")
    page.click("#board-positions .pe-table tr[data-model='pe-learned'] a")
    page.wait_for_selector("body[data-ready='1']")
    idle(page)
    query = parse_qs(urlparse(page.url).query)
    assert urlparse(page.url).path == "/" and query["model"] == ["pe-learned"] and query["lang"] == [lang]
    assert page.input_value("#model") == "pe-learned"
    assert query["text"] == [TEXT]
    lone, groups = grouped_options(page)  # the explorer's chooser groups the family too
    assert "gpt" in lone and groups == {GROUP[lang]: [r["model"] for r in TABLE["members"]]}
    assert watched.errors == []


def demo_tokens(page: Any, side: str) -> list[str]:
    return page.inner_text(f"#board-positions .pe-demo [data-side='{side}'] .pe-tokens").split(" | ")


@pytest.mark.browser
def test_shuffle_demo_runs_the_chosen_member(watched: Any, pe_server: Any) -> None:
    page = watched.page
    open_lab(page, pe_server.url, model="pe-rope", text=TEXT, lang="en", panel="positions")
    assert page.input_value("#board-positions select[data-field='member']") == "pe-rope"  # the lab's model
    assert page.get_attribute("#board-positions .pe-table tr[data-model='pe-rope']", "class") == "current"
    before = page.get_attribute("#panel-positions", "data-rendered")
    page.select_option("#board-positions select[data-field='member']", "pe-none")
    page.wait_for_function(RENDERED_AGAIN, arg=before)
    idle(page)
    assert "positions.member=pe-none" in page.url
    original, shuffled = demo_tokens(page, "original"), demo_tokens(page, "shuffled")
    assert len(original) == len(TEXT) + 1  # characters and the start token
    assert sorted(original) == sorted(shuffled) and original != shuffled
    assert (original[0], original[-1]) == (shuffled[0], shuffled[-1])  # the start token and the last stay put
    numbers = page.inner_text("#board-positions .pe-demo .pe-demo-numbers")
    first = float(re.search(r"First-layer change at the last position: ([-\d.e]+)\.", numbers).group(1))  # type: ignore[union-attr]
    assert first < 1e-4  # no positions: the first layer sees a set (0 up to float rounding)
    assert page.locator("#board-positions .pe-demo .pe-top").first.locator("li").count() == 5
    before = page.get_attribute("#panel-positions", "data-rendered")
    page.fill("#board-positions input[data-field='seed']", "7")
    page.press("#board-positions input[data-field='seed']", "Enter")
    page.wait_for_function(RENDERED_AGAIN, arg=before)
    idle(page)
    assert "positions.seed=7" in page.url and demo_tokens(page, "shuffled") != shuffled
    assert watched.errors == []


@pytest.mark.browser
def test_without_a_member_there_is_no_table(watched: Any, server: Any) -> None:
    page = watched.page
    open_lab(page, server.url, model="gpt", text=TEXT, lang="en", panel="positions")
    assert page.get_attribute("#panel-positions", "data-rendered")
    assert page.locator("#panel-positions .pe-family, #panel-positions .pe-demo").count() == 0
    assert page.locator("#panel-positions .plot .main-svg").count() >= 4  # the rest of the panel is there
    lone, groups = grouped_options(page)
    assert groups == {} and "gpt" in lone
    assert watched.errors == []


def test_fake_family_is_the_shipped_layout(tmp_path: Path) -> None:
    """The fake members are folders like model/weights/pe-*: config.json with the table in its meta."""
    import json

    written = write_pe_family(tmp_path, ("pe-none",))
    document = json.loads((written["pe-none"] / "config.json").read_text(encoding="utf-8"))
    assert document["meta"]["pe_family"] == TABLE and document["config"]["pos_encoding"] == "none"
