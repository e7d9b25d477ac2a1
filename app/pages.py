"""What the two pages are made of, wherever they are rendered: the served pages (app/routers/pages.py) and a
recorded site (static_site/export.py) read the same templates, files, examples and languages from here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import plotly
from fastapi.templating import Jinja2Templates

from lessons.languages import LANGS

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES_DIR = ROOT / "templates"
STATIC_DIR = ROOT / "static"
PLOTLY_JS = Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"
# Both pages draw only heatmaps, bars and lines: plotly.js's own "cartesian" bundle (the same
# version, 4.1.1, from npm's plotly.js-cartesian-dist-min) is 1.5 MB instead of 4.8 MB and parses
# in about half the time. The full bundle stays served at /static/vendor/plotly.min.js.
PLOTLY_CARTESIAN = "/static/vendor/plotly-cartesian.min.js"

EXAMPLES = [
    "The animal didn't cross the street because it was too tired",
    "我爱北京天安门广场。",
    "小明把书给了小红，因为她要复习",
    "我 爱 你",
]

# what every rendering of either page gets: the example sentences, and the languages (lessons/languages.py),
# which the page script reads from <html data-langs> (static/js/shared/i18n.js) instead of listing them again
PAGE_CONTEXT: dict[str, Any] = {"examples": EXAMPLES, "langs": " ".join(LANGS)}

# where the pages' links and files are on this server; a recorded site (static_site/export.py) renders the same
# templates with its own relative places and its bundled scripts (`site`: the page's classic script)
LIVE = {"root": "/", "explorer_href": "/", "lab_href": "/lab", "site": None}

templates = Jinja2Templates(directory=str(TEMPLATES_DIR))  # autoescape is on for .html
