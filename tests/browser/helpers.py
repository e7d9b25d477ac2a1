"""Small helpers shared by the browser tests."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

DIM_WORDS = {"pos": "seq", "q_pos": "query", "k_pos": "key", "head": "heads", "kv_head": "kv_heads", "d_vocab": "vocab"}


def open_page(page: Any, base: str, **params: Any) -> None:
    page.goto(f"{base}/?{urlencode(params)}" if params else f"{base}/")
    page.wait_for_selector("body[data-ready='1']")
    wait_idle(page)


def wait_idle(page: Any) -> None:
    page.wait_for_function("() => !document.body.classList.contains('busy')")


def rendered(page: Any) -> str:
    return page.get_attribute("#stage", "data-rendered") or ""


def press_and_wait(page: Any, key: str) -> None:
    before = rendered(page)
    page.keyboard.press(key)
    page.wait_for_function("(b) => document.querySelector('#stage').dataset.rendered !== b", arg=before)
    wait_idle(page)


def run_text(page: Any, text: str) -> None:
    before = rendered(page)
    page.fill("#text", text)
    page.press("#text", "Enter")
    page.wait_for_function(
        "(b) => document.querySelector('#stage').dataset.rendered !== b || !document.querySelector('#message').hidden",
        arg=before,
    )
    wait_idle(page)


def tick_texts(page: Any) -> list[str]:
    return page.eval_on_selector_all(
        "#panel .plot .xtick text, #panel .plot .ytick text", "els => els.map(e => e.textContent)"
    )


def label(index: int, text: str) -> str:
    """The page's token label rule: position·text, spaces shown as ␣, long ones cut at 20 characters."""
    shown = text.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥").replace("\r", "␍") or "∅"
    if len(shown) > 20:
        shown = shown[:19] + "…"
    return f"{index}·{shown}"


def expected_shape(dims: list[str], sizes: dict[str, int]) -> str:
    return "[" + ", ".join(f"{DIM_WORDS.get(d, d)} {sizes[d]}" for d in dims) + "]"
