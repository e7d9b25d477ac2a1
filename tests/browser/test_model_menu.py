"""The model menu as a learner sees a teacher's store: refused models greyed with why, a Chinese reader first
for Chinese sentences, in the explorer and the lab, in English and Chinese."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import open_page
from tests.browser.lab_page import open_lab

pytestmark = pytest.mark.browser

GEMMA = "unsupported architecture general.architecture = 'gemma3'"
OPTIONS = """els => els.map(o => ({name: o.textContent, value: o.value, disabled: o.disabled, title: o.title,
    group: o.parentElement.tagName === 'OPTGROUP' ? o.parentElement.label : ''}))"""


def test_refused_models_are_greyed_with_why_and_a_chinese_reader_comes_first(browser: Any, tmp_path: Path) -> None:
    from checkpoints import LoadedModel
    from tests.browser.models import ServerThread, tiny_models
    from tests.conftest import free_port

    server = ServerThread(free_port(), tmp_path)
    gpt = tiny_models()["gpt"]
    server.registry.add("reads-zh", LoadedModel(gpt.model, gpt.tokenizer, {**gpt.meta, "first_for": ["zh"]}),
                        source="test")
    server.registry.add_refused("gemma3:1b", "ollama", GEMMA)
    server.registry.add_refused("gpt", "lmstudio", "a model of that name is already registered")
    server.start()
    page = browser.new_page()
    page.set_default_timeout(20000)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    try:
        open_page(page, server.url, lang="zh", text="我爱北京天安门广场。")
        options = page.eval_on_selector_all("#model option", OPTIONS)
        assert options[0]["name"] == "reads-zh"  # first for a Chinese sentence
        refused = [o for o in options if o["disabled"]]
        assert [o["name"] for o in refused] == ["gemma3:1b", "gpt"] and all(o["value"] == "" for o in refused)
        assert refused[0]["title"] == f"未加载：{GEMMA}" and refused[0]["group"].startswith("已找到")
        assert page.input_value("#model") == "gpt"  # the working gpt, not its refused namesake
        open_page(page, server.url, lang="en", text="the cat sat")
        options = page.eval_on_selector_all("#model option", OPTIONS)
        assert options[0]["name"] != "reads-zh"
        refused = [o for o in options if o["disabled"]]
        assert refused[0]["title"] == f"Not loaded: {GEMMA}" and refused[0]["group"].startswith("found, not loaded")
        open_lab(page, server.url, lang="en", model="gpt", text="the cat sat")
        refused = [o for o in page.eval_on_selector_all("#model option", OPTIONS) if o["disabled"]]
        assert [o["name"] for o in refused] == ["gemma3:1b", "gpt"] and refused[0]["title"] == f"Not loaded: {GEMMA}"
        assert page.input_value("#model") == "gpt"
        assert not errors, errors
    finally:
        page.close()
        server.stop()


def test_a_model_still_loading_is_greyed_with_how_far_it_is(browser: Any, tmp_path: Path) -> None:
    import threading
    import time

    from checkpoints.file_precision import current_policy
    from tests.browser.models import ServerThread, tiny_models
    from tests.conftest import free_port

    release = threading.Event()

    def slow_load() -> Any:
        current_policy().report(2, 5)  # a loader's progress after two tensors of five
        release.wait(60)
        return tiny_models()["gpt"]

    server = ServerThread(free_port(), tmp_path)
    server.registry.add("big", loader=slow_load, source="test", large=True)
    server.start()
    page = browser.new_page()
    page.set_default_timeout(20000)
    try:
        for _ in range(200):  # the warm-up has started loading it
            if server.registry.entries["big"].progress == (2, 5):
                break
            time.sleep(0.05)
        open_page(page, server.url, lang="zh", text="the cat sat")
        loading = [o for o in page.eval_on_selector_all("#model option", OPTIONS) if o["group"].startswith("加载中")]
        assert [(o["name"], o["disabled"], o["value"]) for o in loading] == [("big：加载中，40 %", True, "")]
        open_lab(page, server.url, lang="en", model="gpt", text="the cat sat")
        loading = [o for o in page.eval_on_selector_all("#model option", OPTIONS) if o["group"].startswith("loading")]
        assert [o["name"] for o in loading] == ["big: loading, 40 %"]
        release.set()  # the menu asks again every 2 s and says when it is done
        page.wait_for_function("() => [...document.querySelectorAll('#model option[data-loading]')]"
                               ".some(o => o.textContent.includes('loaded'))")
    finally:
        release.set()
        page.close()
        server.stop()
