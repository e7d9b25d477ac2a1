"""The OpenAPI docs at /docs, served with Swagger UI files from an installed package.

FastAPI's default /docs page loads Swagger UI from a CDN, which an offline classroom
cannot reach; the `fastapi-offline` package ships the same files, served here.
"""

from __future__ import annotations

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
    return get_swagger_ui_html(
        openapi_url=str(request.app.openapi_url),
        title="Transformer Explorer API — docs",
        swagger_js_url="/docs-assets/swagger-ui-bundle.js",
        swagger_css_url="/docs-assets/swagger-ui.css",
        swagger_favicon_url="/docs-assets/favicon.png",
    )


@router.get("/docs-assets/{name}")
def swagger_asset(name: str) -> FileResponse:
    if name not in FILES:  # a fixed list: no client-supplied path ever reaches the disk
        raise HTTPException(404)
    return FileResponse(ASSETS / name, headers={"Cache-Control": "public, max-age=86400"})
