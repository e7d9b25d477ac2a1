"""show(result): a result of the Python API drawn by the page's own panels, offline, in Jupyter, JupyterLab,
VS Code and Colab.

The widget is one HTML document in an iframe's srcdoc (what every one of those front ends displays, scripts
and all): static/js/widget.js and the panel modules it imports, made one classic script by the recorded site's
bundler (static_site/bundle.py), Plotly's cartesian bundle (static/vendor/), the page's CSS and the texts
(static/text/), all read from the installed package's files and inlined. The results' answers travel inside it
as the server sent them, so nothing is fetched: no CDN, no server. ←/→ step through a trace's stages (click the
widget first, so that it has the keyboard).
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from app.pages import PAGE_CONTEXT, STATIC_DIR
from lessons.languages import LANGS
from static_site.bundle import bundle
from transformer_explorer.results import Result

CLOSING = re.compile(r"</(script|style)", re.IGNORECASE)
WIDGET_CSS = """
body { margin: 0; padding: 0.4rem; font-family: system-ui, sans-serif; background: #fff; }
.widget-nav { display: flex; gap: 0.6rem; align-items: center; margin-bottom: 0.4rem; }
.widget-nav button { font-size: 1rem; padding: 0.1rem 0.7rem; }
.widget-error { color: #a00; }
"""


def lab_panels() -> list[str]:
    """Every lab panel module (its experiment's, by the lab's one list), for the bundle to hold."""
    from app.lab import EXPERIMENTS

    return [f"lab/panels/{experiment.name}.js" for experiment in EXPERIMENTS]


@lru_cache(maxsize=1)
def _script() -> str:
    """widget.js and every module it reaches (the stage panels, every lab panel) as one classic script."""
    return bundle(STATIC_DIR / "js", "widget.js", also=lab_panels())


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _inline(text: str) -> str:
    """Text safe inside a <script> or <style> element: no '</script' or '</style' closes it early (in a JS string
    or regular expression, '<\\/' reads as '</'; the bundles hold neither today)."""
    return CLOSING.sub(lambda m: "<\\/" + m.group(1), text)


def _texts(lang: str) -> dict[str, str]:
    """The text files the widget's pages read, by the request key a recorded site answers (shared/site.js)."""
    names = [lang, f"lab.{lang}", f"shared.{lang}"]
    return {f"GET /static/text/{name}.json ": _read(STATIC_DIR / "text" / f"{name}.json") for name in names}


SITE_RUNTIME = """window.TE_SITE = (function (texts) {
  return {
    has: function (key) { return Object.prototype.hasOwnProperty.call(texts, key); },
    load: function (key) { return Promise.resolve(texts[key]); },
    about: function () { return { models: [], date: "", version: "" }; },
  };
})(%s);
window.TE_WIDGET = %s;
"""


def widget_html(*results: Result, lang: str = "en", info: dict[str, Any] | None = None) -> str:
    """The widget as one standalone HTML document (what show() puts in its iframe; also a file to keep).
    `info`: the model's description, instead of the one each result carries."""
    if lang not in LANGS:
        raise ValueError(f"lang {lang!r}: the widget is written in {', '.join(LANGS)}")
    if not results:
        raise ValueError("show() needs a result: a trace, attention, predict, generate or lab result")
    items = [{"kind": r.kind, "answer": r.answer, "request": r.request, "info": info or r.info} for r in results]
    data = {"lang": lang, "items": items}
    boot = SITE_RUNTIME % (json.dumps(_texts(lang), ensure_ascii=False), json.dumps(data, ensure_ascii=False))
    return "".join([
        f'<!doctype html><html lang="{lang}" data-langs="{PAGE_CONTEXT["langs"]}"><head><meta charset="utf-8">',
        "<style>", _inline(_read(STATIC_DIR / "css" / "app.css")), WIDGET_CSS, "</style></head>",
        '<body><div id="widget"></div>',
        "<script>", _inline(boot), "</script>",
        '<script id="plotly-js">', _inline(_read(STATIC_DIR / "vendor" / "plotly-cartesian.min.js")), "</script>",
        "<script>", _inline(_script()), "</script>",
        "</body></html>",
    ])


@dataclass
class Widget:
    """The widget of some results; a notebook displays it (_repr_html_: an iframe holding the whole page)."""

    document: str
    height: int = 640

    def _repr_html_(self) -> str:
        return (f'<iframe srcdoc="{html.escape(self.document, quote=True)}" sandbox="allow-scripts" '
                f'style="width: 100%; height: {self.height}px; border: 1px solid #ddd;"></iframe>')

    def save(self, path: str | Path) -> Path:
        """Write the standalone page (opens from a file, offline)."""
        target = Path(path)
        target.write_text(self.document, encoding="utf-8")
        return target


def show(*results: Result, lang: str = "en", height: int = 640, info: dict[str, Any] | None = None) -> Widget:
    """Draw results in a notebook: a trace's stages (←/→ step through them), an attention layer's heads, the
    next-token table, or a lab experiment's charts. `lang`: 'en' or 'zh'. Returns the widget (the cell shows
    it); `.save(path)` keeps it as a page."""
    return Widget(widget_html(*results, lang=lang, info=info), height)
