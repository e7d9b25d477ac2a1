"""The languages the pages and the lessons are written in: one text file each (static/text/<lang>.json,
lab.<lang>.json, shared.<lang>.json) and one view per language in every chapter (lessons/chapters.json).

The one list: the API's `lang` parameter, the chapter loader, the page routes, the recorded site and the page
script (rendered into each page as <html data-langs>, read by static/js/shared/i18n.js) all take it from here.
(training/numbers.py's LANGUAGES is another thing: the languages tiny-translator learned to write numbers in.)
"""

from __future__ import annotations

from typing import Literal, get_args

Lang = Literal["en", "zh"]
LANGS: tuple[str, ...] = get_args(Lang)
