"""Record what the lessons ask the server: the real pages, driven in headless Chromium against a live server.

The pages themselves decide every request (their bodies, their order, what they prefetch), so the recording
is whatever the page asks while it walks the lesson path, and a recorded site answers exactly those. For each
chapter, in English and in Chinese, the walk opens the chapter's view and then:

- at the chapter's stage: every head (H), the all-heads and all-layers views;
- presentation mode (P) on the chapter's view;
- the stepper: every stage of the chapter's layer (the embedding and the next-token table included), clicked in
  the stage list. When every layer's stages would take at most FULL_STEPPER_BYTES (the layer's own answers times
  the number of layers: the tiny models), the walk steps through all of them (→ to the end, ← to the start).
  A larger model (SmolLM2: some 0.5 MB a layer, 30 layers) keeps its chapter's layer, and the site's stepper
  passes over the others (static/js/recorded.js);
- the views the chapter's buttons open here (the translator's cross-attention, ...), and the lab panels it links
  to, with the chapter's model and sentence.

Then each model in the explorer's menu opens each of its example sentences (the chips under the text box) at the
stage the page opens on, and walks that view's stepper by the same rule.

A stepper that would take the recorded answers' files over ANSWERS_BYTES is dropped again (its new answers removed;
its stages then say they need the server), so the site stays within its 40 MB budget (export.py BUDGET_BYTES).

Each /api answer (and the text files) is kept as (key, exact response body); the key is api.js's requestKey.

Work that would only repeat is walked once: the stepper of a (model, sentence, layer) and the heads of a
(model, sentence, stage, layer) are language-independent requests (the page asks /api/trace with no language),
so a chapter whose view an earlier chapter or the other language already walked opens its view, its claims and
its lab links only. `Recording.walked` says what each view walked.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit

from lessons.languages import LANGS
from static_site.data_files import data_text

CHROMIUM = "/usr/bin/chromium"
# a view's stepper walks every layer when one layer's answers times the number of layers is at most this
FULL_STEPPER_BYTES = 1024 * 1024
# the recorded answers' data files stay within this: the site's budget is 40 MiB (export.py BUDGET_BYTES), and its
# pages, scripts, Plotly, the index of answers and the text files take about 3 MB
ANSWERS_BYTES = 36 * 1024 * 1024
QUIET_S = 0.2  # no request in flight for this long: the page (and its prefetch) is done
SETTLE_S = 300.0  # a view whose requests are not all answered by then stops the build, saying where
SLOW_S = 5.0  # an answer slower than this is listed at the end of the build (where its time went)
VIEW_FIELDS = ("model", "text", "target", "iv", "snapshot")  # the URL fields that change what /api/trace answers


@dataclass
class Recording:
    answers: dict[str, bytes] = field(default_factory=dict)  # request key -> the server's exact response body
    failed: list[str] = field(default_factory=list)  # requests the server refused (not kept: they need it)
    errors: list[str] = field(default_factory=list)  # console errors while walking
    slow: list[tuple[float, str]] = field(default_factory=list)  # (seconds, key) of answers slower than SLOW_S
    walked: list[str] = field(default_factory=list)  # per chapter and language: what was walked, what skipped


def request_key(method: str, url: str, body: str | None) -> str:
    """static/js/shared/api.js requestKey: `${method} ${url} ${JSON.stringify(body) or ""}` (url: path + query)."""
    parts = urlsplit(url)
    return f"{method} {parts.path}{'?' + parts.query if parts.query else ''} {body or ''}"


class Recorder:
    """One Chromium page on a live server; every answer to /api and /static/text is kept."""

    def __init__(self, browser: Any, base: str, log: Callable[[str], None] = print) -> None:
        self.base = base.rstrip("/")
        self.log = log
        self.recording = Recording()
        self.last = time.monotonic()
        # id(request) -> when it was asked, while in flight; a navigation forgets the page it leaves (Chromium may
        # report neither the end nor the failure of a request the page was navigated away from)
        self.asked: dict[int, float] = {}
        self.done: set[tuple[str, ...]] = set()  # the steppers and head cycles already walked (see the docstring)
        self.page = browser.new_page(viewport={"width": 1280, "height": 720})
        self.page.set_default_timeout(120_000)  # a SmolLM2 trace on a busy CPU
        self.page.on("request", self._asked)
        self.page.on("requestfinished", self._finished)
        self.page.on("requestfailed", self._done)
        self.page.on("console", lambda m: self.recording.errors.append(m.text) if m.type == "error" else None)

    def _wanted(self, request: Any) -> bool:
        path = urlsplit(request.url).path
        return path.startswith("/api/") or path.startswith("/static/text/")

    def _asked(self, request: Any) -> None:
        if self._wanted(request):
            self.last = self.asked[id(request)] = time.monotonic()

    def _done(self, request: Any) -> None:
        if self._wanted(request):
            self.asked.pop(id(request), None)
            self.last = time.monotonic()

    def _finished(self, request: Any) -> None:
        if not self._wanted(request):
            return
        try:
            response = request.response()
            key = request_key(request.method, request.url, request.post_data)
            took = time.monotonic() - self.asked.get(id(request), time.monotonic())
            if took > SLOW_S:
                self.recording.slow.append((took, key[:200]))
            if response is not None and response.status == 200:
                body = self._body(response)
                if body is not None:
                    self.recording.answers[key] = body
            else:
                self.recording.failed.append(f"{key[:160]} -> {response.status if response else 'none'}")
        finally:
            self._done(request)

    @staticmethod
    def _body(response: Any) -> bytes | None:
        """The response's bytes; None when the page navigated away before they were read (a prefetch the next
        page did not need: what it needs, it asks again, and that answer is kept)."""
        from playwright.sync_api import Error

        try:
            return bytes(response.body())
        except Error:
            return None

    def settle(self) -> None:
        """Wait until the page is drawn and nothing it asked (prefetch included) is in flight."""
        self.page.wait_for_function("() => !document.body.classList.contains('busy')")
        deadline = time.monotonic() + SETTLE_S
        while self.asked or time.monotonic() - self.last < QUIET_S:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(self.asked)} requests in flight after {SETTLE_S:.0f} s at {self.page.url}")
            self.page.wait_for_timeout(100)

    def press(self, key: str) -> None:
        self.page.keyboard.press(key)
        self.settle()

    def state(self) -> dict[str, Any]:
        """The view's stage and layer (from its URL), and the lab links the chapter shows."""
        return dict(self.page.evaluate(
            "() => { const u = new URLSearchParams(location.search); return {stage: u.get('stage'), "
            f"layer: u.get('layer'), view: {list(VIEW_FIELDS)}.map((k) => u.get(k) || ''), "
            "labs: [...document.querySelectorAll('#lesson a.lab-link, #lesson a.live-link')]"
            ".map((a) => a.href).filter((h) => /[/]lab([.]html)?[?]/.test(h))} }"))

    def open(self, query: dict[str, str]) -> dict[str, Any]:
        """Open the explorer at `query` (a chapter, or a model and sentence) and wait until it is drawn."""
        self.asked.clear()  # what the page it leaves still asks is no longer waited for
        self.page.goto(f"{self.base}/?{urlencode(query)}")
        self.page.wait_for_selector("body[data-ready='1']")
        self.settle()
        return self.state()

    def heads(self) -> str:
        """Every head of the stage on screen (H), then its all-heads and all-layers views."""
        page = self.page
        n_heads = page.evaluate("() => document.querySelectorAll('#head option').length") or 1
        at = time.monotonic()
        for _ in range(n_heads):
            self.press("h")
        for shown in ("heads", "layers", "head"):
            button = page.locator(f"#views button[data-view='{shown}']")
            if button.count() and button.is_visible() and button.is_enabled():
                button.click()
                self.settle()
        return f"{n_heads} heads ({time.monotonic() - at:.0f} s)"

    def chapter(self, chapter_id: str, lang: str, stepper: bool = True) -> None:
        """Walk one chapter in one language (see the module's docstring); without `stepper`, its view (and its
        lab links) only."""
        started = time.monotonic()
        query = {"chapter": chapter_id, "lang": lang}
        opened = self.open(query)
        view = tuple(opened["view"])
        walked = [f"view {dict(zip(VIEW_FIELDS, view, strict=True))} stage {opened['stage']} layer {opened['layer']}"]
        heads = ("heads", *view, opened["stage"] or "", opened["layer"] or "")
        if stepper and heads not in self.done:
            self.done.add(heads)
            walked.append(self.heads())
        self.press("p")  # presentation mode at 1280x720, then back
        self.press("p")
        if stepper:
            walked.append(self.stepper(query, opened))
        for live in self.page.evaluate("() => [...document.querySelectorAll('#lesson button.live-link')]"
                                       ".map((b) => b.dataset.live)"):
            self.open(query)  # a chapter's button that opens another view here (the translator's cross-attention)
            self.page.click(f"#lesson button.live-link[data-live='{live}']")
            self.settle()
            walked.append(f"link {live} {self.state()['view'][0]} {self.state()['stage']}")
        for href in dict.fromkeys(opened["labs"]):
            at = time.monotonic()
            self.lab(href)
            walked.append("lab " + href.split("?", 1)[-1].split("&", 1)[0] + f" ({time.monotonic() - at:.0f} s)")
        walked.append(f"{time.monotonic() - started:.0f} s")
        self.recording.walked.append(f"{lang} {chapter_id}: " + "; ".join(filter(None, walked)))

    def examples(self, stepper: bool = True) -> None:
        """Each model in the explorer's menu, each of its example sentences: the view it opens on, and (`stepper`)
        its stepper."""
        page = self.page
        self.open({"lang": "en"})
        models = page.evaluate("() => [...document.querySelectorAll('#model option')].filter((o) => !o.disabled)"
                               ".map((o) => o.value)")
        for model in models:
            self.open({"model": model, "lang": "en"})
            chips = page.evaluate(
                "() => [...document.querySelectorAll('.examples .example')].filter((b) => b.offsetParent !== null)"
                ".map((b) => [b.dataset.text, b.dataset.target ?? null])")
            for text, target in chips:
                started = time.monotonic()
                query = {"model": model, "text": text, "lang": "en"}
                if target is not None:
                    query["target"] = target
                opened = self.open(query)
                walked = self.stepper(query, opened) if stepper else "its view"
                self.recording.walked.append(f"example {model} {text!r}{f' -> {target!r}' if target else ''}: stage "
                                             f"{opened['stage']} layer {opened['layer']}; {walked}; "
                                             f"{time.monotonic() - started:.0f} s")
                self.log(f"  {self.recording.walked[-1]} -> {len(self.recording.answers)} answers")

    def stepper(self, query: dict[str, str], opened: dict[str, Any]) -> str:
        """The view's stepper (see the module's docstring): its layer's stages, and every layer's when they fit.
        Returns what was walked; '' when this (model, sentence, layer) was walked before."""
        layer = opened["layer"] or ""
        steps = ("steps", *opened["view"], layer)
        every = ("steps", *opened["view"], "every layer")
        if steps in self.done or every in self.done:
            return ""
        self.done.add(steps)
        page = self.page
        at = time.monotonic()
        before = dict.fromkeys(self.recording.answers)  # what was recorded before it (to drop it if too large)
        self.open(query)
        stages = page.evaluate("() => document.querySelectorAll('#stage-list button[data-stage]').length")
        seen = set()
        for i in range(stages):
            page.locator("#stage-list button[data-stage]").nth(i).click()
            self.settle()
            seen.add(self.state()["layer"])
        n_layers = page.evaluate("() => document.querySelectorAll('#layer option').length") or 1
        layer = ", ".join(sorted(str(x) for x in seen if x)) or layer  # a view opened on tokens: the page's layer
        one_layer = sum(len(self.recording.answers[key]) for key in self.recording.answers
                        if key not in before and re.search(r"blocks\.\d+\.", key))
        full = one_layer * n_layers <= FULL_STEPPER_BYTES
        if full:  # every layer: → to the end and ← to the start, from the view
            self.done.add(every)
            for step in ("ArrowRight", "ArrowLeft"):
                self.open(query)
                while True:
                    url = page.url
                    self.press(step)
                    if page.url == url:
                        break
        else:  # the page prefetched the stage after this layer's last one (the next layer's first): not kept, or
            # → would step into a layer the site holds one stage of
            for key in [key for key in self.recording.answers if key not in before]:
                if {int(n) for n in re.findall(r"blocks\.(\d+)\.", key)} - {int(n) for n in seen if n}:
                    del self.recording.answers[key]
        added = [key for key in self.recording.answers if key not in before]
        size = sum(len(self.recording.answers[key]) for key in added)
        walked = (f"stepper ({stages} stages, {'all ' + str(n_layers) + ' layers' if full else 'layer ' + layer}; "
                  f"{size / 1e6:.1f} MB, {time.monotonic() - at:.0f} s)")
        return self.keep_within_budget(before, walked)

    def keep_within_budget(self, before: dict[str, None], walked: str) -> str:
        """Keep the answers recorded since `before` while the recording is within ANSWERS_BYTES, else remove them
        (what was recorded before stays). Returns `walked`, saying so when they were dropped."""
        if self.recorded_bytes() <= ANSWERS_BYTES:
            return walked
        for key in [key for key in self.recording.answers if key not in before]:
            del self.recording.answers[key]
        return walked + ": dropped (the site's budget)"

    def recorded_bytes(self) -> int:
        """The size of the recorded answers' data files (as export.py writes them)."""
        return sum(len(data_text(key, body)) for key, body in self.recording.answers.items())

    def lab(self, href: str) -> None:
        page = self.page
        self.asked.clear()
        page.goto(href)
        page.wait_for_function("() => { const p = new URLSearchParams(location.search).get('panel') || "
                               "location.hash.replace('#panel-', ''); const el = document.getElementById('panel-' + p);"
                               " return el && el.dataset.rendered; }")
        self.settle()


def record_lessons(base: str, chapters: list[str], log: Callable[[str], None] = print,
                   executable: str = CHROMIUM, stepper: bool = True, browser: Any = None,
                   examples: bool = True) -> Recording:
    """Drive every chapter (by id) in EN and ZH against the server at `base`; `stepper`: step through its stages;
    `examples`: then every model's example sentences. `browser`: a Playwright browser to use (one process may run
    one Playwright at a time); else one of its own."""
    if browser is not None:
        return walk_lessons(browser, base, chapters, log, stepper, examples)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        own = p.chromium.launch(executable_path=executable,
                                args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        try:
            return walk_lessons(own, base, chapters, log, stepper, examples)
        finally:
            own.close()


def walk_lessons(browser: Any, base: str, chapters: list[str], log: Callable[[str], None], stepper: bool,
                 examples: bool) -> Recording:
    recorder = Recorder(browser, base, log)
    try:
        for lang in LANGS:
            for chapter_id in chapters:
                recorder.chapter(chapter_id, lang, stepper)
                log(f"  {recorder.recording.walked[-1]} -> {len(recorder.recording.answers)} answers")
        if examples:
            recorder.examples(stepper)
        return recorder.recording
    finally:
        recorder.page.close()
