"""The vendored plotly.js points at nothing off this server (static/vendor/README.md): classrooms are often offline."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "static" / "vendor" / "plotly-cartesian.min.js"


def test_no_config_default_names_a_remote_address() -> None:
    source = BUNDLE.read_text(encoding="utf-8")
    remote_defaults = re.findall(r'(\w+):\{valType:"string"[^}]*dflt:"(https?://[^"]*)"', source)
    assert remote_defaults == []
    assert 'topojsonURL:{valType:"string",noBlank:!0,dflt:"/static/vendor/topojson/"}' in source
    assert "cdn.plot.ly" not in source and "cloud.plotly.com" not in source


def test_the_page_config_keeps_plotly_local_for_both_bundles() -> None:
    config = (ROOT / "static" / "js" / "shared" / "plot.js").read_text(encoding="utf-8")
    assert 'plotlyServerURL: ""' in config
    assert 'topojsonURL: "/static/vendor/topojson/"' in config
