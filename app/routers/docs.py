"""The OpenAPI docs at /docs, served with Swagger UI files from an installed package.

FastAPI's default /docs page loads Swagger UI from a CDN, which an offline classroom
cannot reach; the `fastapi-offline` package ships the same files, served here.
"""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

import fastapi_offline
from fastapi import APIRouter, HTTPException, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse

ASSETS = Path(fastapi_offline.__file__).resolve().parent / "static"
FILES = {"swagger-ui-bundle.js", "swagger-ui.css", "favicon.png"}

router = APIRouter(include_in_schema=False)


@router.get("/docs", response_class=HTMLResponse)
def swagger_ui(request: Request) -> HTMLResponse:
    page = get_swagger_ui_html(
        openapi_url=str(request.app.openapi_url),
        title="Transformer Explorer API — docs",
        swagger_js_url="/docs-assets/swagger-ui-bundle.js",
        swagger_css_url="/docs-assets/swagger-ui.css",
        swagger_favicon_url="/docs-assets/favicon.png",
    )
    page.headers["Content-Security-Policy"] = content_security_policy(bytes(page.body).decode())
    return page


def content_security_policy(html: str) -> str:
    """The page's own policy: files from this server only, and the inline script that starts Swagger UI,
    allowed by its hash (not by 'unsafe-inline')."""
    inline = re.findall(r"<script>(.*?)</script>", html, flags=re.DOTALL)
    hashes = " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()}'" for s in inline)
    return "; ".join([
        "default-src 'self'",
        f"script-src 'self' {hashes}".strip(),
        "style-src 'self' 'unsafe-inline'",  # Swagger UI sets style attributes
        "img-src 'self' data:",  # and draws its icons as data: images
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ])


@router.get("/docs-assets/{name}")
def swagger_asset(name: str) -> FileResponse:
    if name not in FILES:  # a fixed list: no client-supplied path ever reaches the disk
        raise HTTPException(404)
    return FileResponse(ASSETS / name, headers={"Cache-Control": "public, max-age=86400"})
