"""A recorded answer as the site stores it: one script file that hands the exact response text to TE_SITE.put."""

from __future__ import annotations

import hashlib
import json


def data_file(key: str) -> str:
    """The answer's file, relative to the site's root: named by its request key's hash."""
    return f"data/{hashlib.sha256(key.encode('utf-8')).hexdigest()[:20]}.js"


def js_string(body: bytes) -> str:
    """The exact response text as a JS string literal (ASCII only: the file reads the same in any encoding)."""
    return json.dumps(body.decode("utf-8"), ensure_ascii=True)


def data_text(key: str, body: bytes) -> str:
    """The file's text: TE_SITE.put(key, "<the server's exact response body>")."""
    return f"TE_SITE.put({json.dumps(key, ensure_ascii=True)}, {js_string(body)});\n"
