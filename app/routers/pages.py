"""The explorer page: the HTML shell, its static files and a vendored Plotly.

Everything the page needs is served by this app, so it works offline (no CDN). The page
gets a strict Content-Security-Policy: scripts only from this origin, no inline script.
Plotly injects <style> rules at run time, so styles keep 'unsafe-inline'.
"""

from __future__ import annotations

import mimetypes
from functools import lru_cache
from pathlib import Path

import plotly
from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse, Response
from fastapi.templating import Jinja2Templates

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES_DIR = ROOT / "templates"
STATIC_DIR = ROOT / "static"
PLOTLY_JS = Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"
# The explorer draws only heatmaps, bars and lines: plotly.js's own "cartesian" bundle (the same
# version, 4.1.1, from npm's plotly.js-cartesian-dist-min) is 1.5 MB instead of 4.8 MB and parses
# in about half the time. The lab page keeps the full bundle.
PLOTLY_CARTESIAN = "/static/vendor/plotly-cartesian.min.js"

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

EXAMPLES = [
    "The animal didn't cross the street because it was too tired",
    "我爱北京天安门广场。",
    "小明把书给了小红，因为她要复习",
    "我 爱 你",
]

templates = Jinja2Templates(directory=str(TEMPLATES_DIR))  # autoescape is on for .html
router = APIRouter(tags=["pages"])

mimetypes.add_type("text/javascript", ".js")
mimetypes.add_type("text/css", ".css")


@lru_cache(maxsize=1)
def explorer_modules() -> list[str]:
    """Every module of the explorer (not the lab's), so the page asks for them all at once
    (<link rel=modulepreload>) instead of discovering them import by import."""
    js = STATIC_DIR / "js"
    files = [p for p in sorted(js.rglob("*.js")) if "lab" not in p.relative_to(js).parts]
    return [f"/static/{p.relative_to(STATIC_DIR).as_posix()}" for p in files]


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
def index(request: Request) -> Response:
    context = {"examples": EXAMPLES, "modules": explorer_modules(), "plotly": PLOTLY_CARTESIAN}
    response = templates.TemplateResponse(request, "index.html", context)
    response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY  # the rest: SecurityHeadersMiddleware
    response.headers["Cache-Control"] = "no-cache"
    return response


LAB_PANELS = ["interventions", "scaling", "masks", "positions", "parameters", "sampling", "compare"]


@router.get("/lab", response_class=HTMLResponse, include_in_schema=False)
def lab(request: Request) -> Response:
    """The lab: one panel per /api/lab endpoint, the interventions side by side, and a variant to compare."""
    response = templates.TemplateResponse(request, "lab.html", {"examples": EXAMPLES, "panels": LAB_PANELS})
    response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    response.headers["Cache-Control"] = "no-cache"
    return response


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
