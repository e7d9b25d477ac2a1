"""The OpenAPI docs work offline: every asset /docs loads comes from this server."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient


def test_docs_page_loads_only_local_assets(client: TestClient) -> None:
    page = client.get("/docs")
    assert page.status_code == 200
    sources = re.findall(r"""(?:src|href)=["']([^"']+)""", page.text)
    sources += re.findall(r"""url:\s*['"]([^'"]+)""", page.text)
    assert sources
    for source in sources:
        assert source.startswith("/"), f"/docs reaches outside the server: {source}"
        assert client.get(source).status_code == 200, source


def test_docs_assets_are_a_fixed_list(client: TestClient) -> None:
    assert client.get("/docs-assets/swagger-ui.css").status_code == 200
    assert client.get("/docs-assets/core.py").status_code == 404
    assert client.get("/docs-assets/..%2F__init__.py").status_code == 404
