"""Check a written site: every chapter holds its claims, its questions and its stepper in both languages, and no
answer holds a placeholder.

`python -m static_site.check DIR` (`make site-check`): a site recorded from the shipped models must hold, for
every chapter in EN and ZH, the claims answer with each claim's measured line, the questions answer with each
question's right answer and its why (a student alone predicts, then reveals, on the site), and the stepper's last
stage, the next-token table of the chapter's sentence (/api/predict); a site recorded without a chapter's model
(the tests' tiny models) is told which chapters it lacks, by name. Every recorded answer is read as the page reads
it and searched for an unfilled {placeholder} or a NaN.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from lessons import chapters as lessons
from lessons.languages import LANGS

UNFILLED = re.compile(r"\{[a-z_]+\}|\bNaN\b|\bundefined\b")  # a template's hole, a number that is not one
DATA_PREFIX = "TE_SITE.put("


def recorded(folder: Path) -> dict[str, str]:
    """Every data file's (request key -> recorded response text), read back as the page reads it."""
    decoder = json.JSONDecoder()
    out = {}
    for path in sorted((folder / "data").glob("*.js")):
        if path.name == "index.js":
            continue
        text = path.read_text(encoding="ascii")
        if not text.startswith(DATA_PREFIX):
            raise ValueError(f"{path}: not a recorded answer")
        key, end = decoder.raw_decode(text, len(DATA_PREFIX))
        body, _ = decoder.raw_decode(text, end + 2)
        out[key] = body
    return out


def claims_key(chapter_id: str, lang: str) -> str:
    return f"GET /api/lessons/{chapter_id}/claims?lang={lang} "


def questions_key(chapter_id: str, lang: str) -> str:
    return f"GET /api/lessons/{chapter_id}/questions?lang={lang} "


def strings(value: Any) -> list[str]:
    """Every string inside a parsed JSON answer (tensors are base64 strings: they hold no braces or words)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def predicted(answers: dict[str, str]) -> set[tuple[str, str, str]]:
    """The (model, text, target) of every next-token table the site holds (the stepper's last stage)."""
    out = set()
    for key in answers:
        if key.startswith("POST /api/predict "):
            body = json.loads(key.split(" ", 2)[2])
            out.add((body.get("model", ""), body.get("text", ""), body.get("target_text", "")))
    return out


def problems(folder: Path, models: set[str] | None = None, chapters: list[str] | None = None,
             steppers: bool = True) -> list[str]:
    """What is wrong with the site in `folder`; `models`: the models it was recorded from (None: the shipped ones,
    so every chapter must hold its claims); `chapters`: the chapters it recorded (None: all); `steppers`: it was
    recorded with steppers (each chapter's sentence then holds its next-token table)."""
    answers = recorded(folder)
    tables = predicted(answers)
    found = []
    for key, text in answers.items():
        if not key.split(" ", 2)[1].startswith("/api/"):
            continue
        for s in strings(json.loads(text)):
            hole = UNFILLED.search(s)
            if hole:
                found.append(f"{key[:120]}: {hole.group(0)!r} in {s[:120]!r}")
    for chapter in lessons.chapters():
        if chapters is not None and chapter.id not in chapters:
            continue
        for lang in LANGS:
            model = chapter.in_lang(lang).model
            if models is not None and model not in models:
                continue  # recorded without this chapter's model: the page says it needs the server
            view = chapter.in_lang(lang)
            if steppers and (view.model, view.text, view.target or "") not in tables:
                found.append(f"{lang} {chapter.id}: no stepper recorded (no next-token table of {view.text!r})")
            answer = answers.get(claims_key(chapter.id, lang))
            if answer is None:
                found.append(f"{lang} {chapter.id}: no claims recorded")
                continue
            claims = json.loads(answer)["claims"]
            if len(claims) != len(chapter.in_lang(lang).claims) or not all(c["line"].strip() for c in claims):
                found.append(f"{lang} {chapter.id}: {len(claims)} claims, some without a measured line")
            # its questions (predict, then reveal): the page checks an answer on the recorded one, alone
            asked = answers.get(questions_key(chapter.id, lang))
            questions = json.loads(asked)["questions"] if asked is not None else []
            if [q["id"] for q in questions] != [q["id"] for q in view.questions] or not all(
                    q["defined"] and q["why"].strip() for q in questions):
                found.append(f"{lang} {chapter.id}: its questions not recorded, or one without its answer")
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m static_site.check DIR")
        return 2
    found = problems(Path(argv[0]))
    for line in found:
        print(f"  {line}")
    print(f"site check: {len(found)} problems" if found else
          "site check: every chapter's claims, questions and stepper, no placeholder")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
