"""A measured claim's line in the page's language: the words come from static/text/<lang>.json, the numbers
from the measurement.

A claim kind returns facts (lessons/view.py `Claim.values`); `line` fills ui.claim_<kind> (or
ui.claim_<kind>_<pattern>, where a kind has a sentence per pattern) with them, so no sentence in either language is
written in Python.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from lessons.languages import LANGS

TEXT_DIR = Path(__file__).resolve().parents[1] / "static" / "text"


@lru_cache(maxsize=len(LANGS))
def ui_words(lang: str) -> dict[str, str]:
    """The page's words in `lang` (static/text/<lang>.json `ui`): claim_<kind>, the sentence each claim kind
    prints, and pat_<pattern>, a head pattern's name."""
    if lang not in LANGS:
        raise ValueError(f"no texts in {lang!r}: the pages are written in {', '.join(LANGS)}")
    words: dict[str, str] = json.loads((TEXT_DIR / f"{lang}.json").read_text(encoding="utf-8"))["ui"]
    return words


def shown(value: Any) -> str:
    """A measured value as a line prints it: weights with two decimals, tiny errors in scientific notation."""
    if isinstance(value, bool) or not isinstance(value, float):
        return str(value)
    if value == 0:
        return "0"
    if abs(value) < 0.005:
        return f"{value:.1e}"
    return f"{value:.2f}"


def line(kind: str, values: Mapping[str, Any], words: Mapping[str, str]) -> str:
    """ui.claim_<kind> with the measured values filled in ({weight}, {query}, ...; {pattern} by its name)."""
    filled = {key: shown(value) for key, value in values.items()}
    if "pattern" in values:
        filled["pattern"] = words.get(f"pat_{values['pattern']}", str(values["pattern"]))
    if kind != "row_top":  # a predicted token's leading space, shown as the page shows it (row_top names words)
        filled.update({k: str(values[k]).replace(" ", "␣") for k in ("token", "top", "clean_answer", "corrupted_answer")
                       if k in values})
    template = words.get(f"claim_{kind}_{values.get('pattern')}") or words.get(f"claim_{kind}", "")
    return template.format_map(filled)
