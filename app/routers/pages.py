"""The two pages' routes (the explorer at /, the lab at /lab): their HTML shells, static files and a vendored
Plotly. What the pages are made of (templates, examples, languages) is app/pages.py, shared with a recorded site.

Everything the page needs is served by this app, so it works offline (no CDN). The page
gets a strict Content-Security-Policy: scripts only from this origin, no inline script.
Plotly injects <style> rules at run time, so styles keep 'unsafe-inline'.
"""

from __future__ import annotations

import json
import mimetypes
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse, Response

from app.lab_panels import LAB_PANELS, lab_panel_named, lab_panel_names
from app.pages import LIVE, PAGE_CONTEXT, PLOTLY_CARTESIAN, PLOTLY_JS, STATIC_DIR, templates
from lessons import chapters
from lessons.languages import LANGS

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",  # Plotly adds <style> rules and style attributes
        "img-src 'self' data: blob:",  # Plotly's PNG export draws through data: / blob: images
        "font-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)

router = APIRouter(tags=["pages"])

mimetypes.add_type("text/javascript", ".js")
mimetypes.add_type("text/css", ".css")


IMPORT = re.compile(r'^import\s[^"\n]*?"(\.{1,2}/[^"]+)";', re.M)


@lru_cache(maxsize=4)
def page_modules(entry: str) -> list[str]:
    """Every module page script `entry` (under static/js) imports, itself included, so the page asks
    for them all at once (<link rel=modulepreload>) instead of discovering them import by import."""
    js = STATIC_DIR / "js"
    seen: list[Path] = []
    todo = [js / entry]
    while todo:
        path = todo.pop()
        if path in seen or not path.is_file():
            continue
        seen.append(path)
        todo += [(path.parent / target).resolve() for target in IMPORT.findall(path.read_text(encoding="utf-8"))]
    return sorted(f"/static/{p.relative_to(STATIC_DIR).as_posix()}" for p in seen)


def _secured(response: Response) -> Response:
    response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY  # the rest: SecurityHeadersMiddleware
    response.headers["Cache-Control"] = "no-cache"
    return response


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
def index(request: Request) -> Response:
    # the lesson path, written once (lessons/chapters.json), rendered into the page for static/js/lessons.js
    context = {**PAGE_CONTEXT, "modules": page_modules("main.js"), "plotly": PLOTLY_CARTESIAN,
               "chapters": chapters.for_page(), **LIVE}
    return _secured(templates.TemplateResponse(request, "index.html", context))


@lru_cache(maxsize=len(LANGS))
def _lab_words(lang: str) -> dict[str, str]:
    data = json.loads((STATIC_DIR / "text" / f"lab.{lang}.json").read_text(encoding="utf-8"))
    return dict(data["ui"])


def _page_lang(request: Request) -> str:
    """The language the page opens in: ?lang=, else the browser's first choice (as the page script picks it)."""
    asked = request.query_params.get("lang")
    if asked in LANGS:
        return asked
    return "zh" if request.headers.get("accept-language", "").lower().startswith("zh") else "en"


@router.get("/lab", response_class=HTMLResponse, include_in_schema=False)
def lab(request: Request) -> Response:
    """The lab: one panel at a time (?panel=<name>, app/lab_panels.py), with a table of contents.
    Its words are in the HTML already, in the page's language, so it reads while the script loads."""
    lang = _page_lang(request)
    words = _lab_words(lang)
    shown = lab_panel_named(request.query_params.get("panel"))  # a panel's name or an older name of it
    # the page imports every panel's module by its name at start (static/js/lab/panels/index.js: each declares
    # its URL fields, which the page reads from the first URL): all are asked for with the page's own modules
    modules = sorted({*page_modules("lab/main.js"), *(m for name in lab_panel_names()
                                                       for m in page_modules(f"lab/panels/{name}.js"))})
    context = {
        **PAGE_CONTEXT,
        "panels": LAB_PANELS,
        "shown": shown,
        "lang": lang,
        "say": words.__getitem__,  # a missing key fails the page (and its tests), never shows empty
        "modules": modules,
        "plotly": PLOTLY_CARTESIAN,
        **LIVE,
    }
    return _secured(templates.TemplateResponse(request, "lab.html", context))


@lru_cache(maxsize=len(LANGS))
def _class_data(lang: str) -> dict[str, Any]:
    """What a class page's script says (the class_* words of static/text/<lang>.json) and the chapters it names."""
    ui = json.loads((STATIC_DIR / "text" / f"{lang}.json").read_text(encoding="utf-8"))["ui"]
    words = {key: value for key, value in ui.items() if key.startswith("class_") or key == "lang_toggle"}
    listed = [{"id": c.id, "title": ui[f"lesson.{c.id}.title"]} for c in chapters.chapters()]
    return {"lang": lang, "words": words, "chapters": listed}


def _class_page(request: Request, role: str) -> Response:
    lang = _page_lang(request)
    data = _class_data(lang)
    say = data["words"].__getitem__  # a missing word fails the page, never shows blank
    context = {**PAGE_CONTEXT, "role": role, "html_lang": "zh-CN" if lang == "zh" else lang, "data": data,
               "other_lang": "zh" if lang == "en" else "en", "say": say}
    return _secured(templates.TemplateResponse(request, "classroom.html", context))


@router.get("/class", response_class=HTMLResponse, include_in_schema=False)
def class_student(request: Request) -> Response:
    """A student's page of a class (?code=): join with a nickname, then answer what the teacher asks."""
    return _class_page(request, "student")


@router.get("/class/teach", response_class=HTMLResponse, include_in_schema=False)
def class_teacher(request: Request) -> Response:
    """The teacher's page: start a class, show its code and QR code, ask, watch the answers come, reveal."""
    return _class_page(request, "teacher")


@lru_cache(maxsize=1)
def _plotly_bytes() -> bytes:
    return PLOTLY_JS.read_bytes()


@router.get("/static/vendor/plotly.min.js", include_in_schema=False)
def plotly_js() -> Response:
    """plotly.js from the installed `plotly` package (4.8 MB, cached by the browser for a day)."""
    if not PLOTLY_JS.is_file():
        raise HTTPException(status_code=404, detail="plotly.min.js is missing from the plotly package")
    return Response(
        _plotly_bytes(),
        media_type="text/javascript; charset=utf-8",
        headers={"Cache-Control": "public, max-age=86400"},
    )


@router.get("/static/{path:path}", include_in_schema=False)
def static_file(path: str) -> Response:
    """Files under static/ only; anything that resolves outside it is a 404."""
    target = (STATIC_DIR / path).resolve()
    if not target.is_relative_to(STATIC_DIR) or not target.is_file():
        raise HTTPException(status_code=404, detail="no such static file")
    media_type = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
    if media_type.startswith("text/"):
        media_type += "; charset=utf-8"
    # vendored third-party files change only with their name's version; the page's own files revalidate
    cache = "public, max-age=86400" if path.startswith("vendor/") else "no-cache"
    return FileResponse(target, media_type=media_type, headers={"Cache-Control": cache})
