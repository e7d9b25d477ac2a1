"""Record what the lessons ask the server: the real pages, driven in headless Chromium against a live server.

The pages themselves decide every request (their bodies, their order, what they prefetch), so the recording
is whatever the page asks while it walks the lesson path, and a recorded site answers exactly those. For each
chapter, in English and in Chinese, the walk opens the chapter's view and then:

- steps through every stage of the chapter's layer, forward then back (the stepper, the next-token table
  included): always for a small model (at most SMALL_LAYERS layers: the shipped tiny ones); for a larger one
  only while the recording stays within LARGE_STEPPERS_BYTES. Each SmolLM2 step asks the stage of all 30 layers,
  so one sentence's stepper is some 20 MB (its four sentences' steppers were 91 of a 99 MB site; the budget is
  40 MB): a larger model's stepper is skipped when the largest one walked so far would not fit, and dropped
  again (its new answers removed) when it did not fit after all; its stages then say they need the server;
- at the chapter's stage: every head (H), the all-heads and all-layers views;
- presentation mode (P) on the chapter's view;
- the lab panel the chapter links to, with the chapter's model and sentence.

Each /api answer (and the text files) is kept as (key, exact response body); the key is api.js's requestKey.

Work that would only repeat is walked once: the stepper of a (model, sentence[, layer]) and the heads of a
(model, sentence, stage, layer) are language-independent requests (the page asks /api/trace with no language),
so a chapter whose view an earlier chapter or the other language already walked opens its view, its claims and
its lab links only. `Recording.walked` says what each chapter walked.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit

CHROMIUM = "/usr/bin/chromium"
SMALL_LAYERS = 8  # a model with at most this many layers is stepped at every chapter's layer
# a larger model's steppers are kept while all answers recorded stay under this (the site's budget is 40 MB; the
# rest of the walk, views, heads, claims and lab panels, has been about 10 MB)
LARGE_STEPPERS_BYTES = 28 * 1024 * 1024
QUIET_S = 0.2  # no request in flight for this long: the page (and its prefetch) is done
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
        self.in_flight = 0
        self.last = time.monotonic()
        self.asked: dict[int, float] = {}  # id(request) -> when it was asked
        self.done: set[tuple[str, ...]] = set()  # the steppers and head cycles already walked (see the docstring)
        self.largest_stepper = 0  # bytes of the largest stepper of a larger model kept so far (an estimate)
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
            self.in_flight += 1
            self.last = self.asked[id(request)] = time.monotonic()

    def _done(self, request: Any) -> None:
        if self._wanted(request):
            self.in_flight -= 1
            self.last = time.monotonic()

    def _finished(self, request: Any) -> None:
        if not self._wanted(request):
            return
        try:
            response = request.response()
            key = request_key(request.method, request.url, request.post_data)
            took = time.monotonic() - self.asked.pop(id(request), time.monotonic())
            if took > SLOW_S:
                self.recording.slow.append((took, key[:200]))
            if response is not None and response.status == 200:
                self.recording.answers[key] = response.body()
            else:
                self.recording.failed.append(f"{key[:160]} -> {response.status if response else 'none'}")
        finally:
            self._done(request)

    def settle(self) -> None:
        """Wait until the page is drawn and nothing it asked (prefetch included) is in flight."""
        self.page.wait_for_function("() => !document.body.classList.contains('busy')")
        while self.in_flight > 0 or time.monotonic() - self.last < QUIET_S:
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

    def chapter(self, chapter_id: str, lang: str, stepper: bool = True) -> None:
        """Walk one chapter in one language (see the module's docstring); without `stepper`, its view (and its
        lab links) only."""
        page = self.page
        started = time.monotonic()
        page.goto(f"{self.base}/?{urlencode({'chapter': chapter_id, 'lang': lang})}")
        page.wait_for_selector("body[data-ready='1']")
        self.settle()
        opened = self.state()
        layer = opened["layer"]
        plan = page.evaluate("() => document.querySelectorAll('#stage-list li').length") or 0
        small = (page.evaluate("() => document.querySelectorAll('#layer option').length") or 1) <= SMALL_LAYERS
        n_heads = page.evaluate("() => document.querySelectorAll('#head option').length") or 1
        view = tuple(opened["view"])
        heads = ("heads", *view, opened["stage"] or "", layer or "")
        steps = ("steps", *view, layer or "")
        walked = [f"view {dict(zip(VIEW_FIELDS, view, strict=True))} stage {opened['stage']} layer {layer}"]
        # the chapter's stage: every head, then the all-heads and all-layers views (where the stage has them)
        if stepper and heads not in self.done:
            self.done.add(heads)
            walked.append(f"{n_heads} heads")
            at = time.monotonic()
            for _ in range(n_heads):
                self.press("h")
            for shown in ("heads", "layers", "head"):
                button = page.locator(f"#views button[data-view='{shown}']")
                if button.count() and button.is_visible() and button.is_enabled():
                    button.click()
                    self.settle()
            walked[-1] += f" ({time.monotonic() - at:.0f} s)"
        self.press("p")  # presentation mode at 1280x720, then back
        self.press("p")
        # the stepper, forward then back from the chapter's stage
        before = dict.fromkeys(self.recording.answers)  # what was recorded before it (to drop it if too large)
        fits = small or self.recorded_bytes() + self.largest_stepper <= LARGE_STEPPERS_BYTES
        if stepper and fits and steps not in self.done:
            self.done.add(steps)
            walked.append(f"stepper ({plan} stages of layer {layer})")
            at = time.monotonic()
        else:
            if stepper and not fits and steps not in self.done:
                walked.append("stepper skipped (the site's budget)")
            stepper = False
        for step in ("ArrowRight", "ArrowLeft") if stepper else ():
            page.goto(f"{self.base}/?{urlencode({'chapter': chapter_id, 'lang': lang})}")
            page.wait_for_selector("body[data-ready='1']")
            self.settle()
            while True:
                before = page.url
                self.press(step)
                if page.url == before:
                    break
        if stepper:
            walked[-1] += f" ({time.monotonic() - at:.0f} s)"
            if not small:
                self.keep_within_budget(before, walked)
        for href in dict.fromkeys(opened["labs"]):
            at = time.monotonic()
            self.lab(href)
            walked.append("lab " + href.split("?", 1)[-1].split("&", 1)[0] + f" ({time.monotonic() - at:.0f} s)")
        walked.append(f"{time.monotonic() - started:.0f} s")
        self.recording.walked.append(f"{lang} {chapter_id}: " + "; ".join(walked))

    def recorded_bytes(self) -> int:
        return sum(len(body) for body in self.recording.answers.values())

    def keep_within_budget(self, before: dict[str, None], walked: list[str]) -> None:
        """A larger model's stepper just walked: keep it if the recording is within LARGE_STEPPERS_BYTES, else
        remove the answers it added (those stages then need the server)."""
        added = [key for key in self.recording.answers if key not in before]
        size = sum(len(self.recording.answers[key]) for key in added)
        if self.recorded_bytes() <= LARGE_STEPPERS_BYTES:
            self.largest_stepper = max(self.largest_stepper, size)
            walked[-1] += f", {size / 1e6:.1f} MB"
            return
        for key in added:
            del self.recording.answers[key]
        walked[-1] += f", {size / 1e6:.1f} MB: dropped (the site's budget)"

    def lab(self, href: str) -> None:
        page = self.page
        page.goto(href)
        page.wait_for_function("() => { const p = new URLSearchParams(location.search).get('panel') || "
                               "location.hash.replace('#panel-', ''); const el = document.getElementById('panel-' + p);"
                               " return el && el.dataset.rendered; }")
        self.settle()


def record_lessons(base: str, chapters: list[str], log: Callable[[str], None] = print,
                   executable: str = CHROMIUM, stepper: bool = True, browser: Any = None) -> Recording:
    """Drive every chapter (by id) in EN and ZH against the server at `base`; `stepper`: step through its stages.
    `browser`: a Playwright browser to use (one process may run one Playwright at a time); else one of its own."""
    if browser is not None:
        return walk_lessons(browser, base, chapters, log, stepper)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        own = p.chromium.launch(executable_path=executable,
                                args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        try:
            return walk_lessons(own, base, chapters, log, stepper)
        finally:
            own.close()


def walk_lessons(browser: Any, base: str, chapters: list[str], log: Callable[[str], None], stepper: bool) -> Recording:
    recorder = Recorder(browser, base, log)
    try:
        for lang in ("en", "zh"):
            for chapter_id in chapters:
                recorder.chapter(chapter_id, lang, stepper)
                log(f"  {recorder.recording.walked[-1]} -> {len(recorder.recording.answers)} answers")
        return recorder.recording
    finally:
        recorder.page.close()
