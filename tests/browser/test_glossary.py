"""The Chinese texts use one word for each idea: the glossary in docs/GLOSSARY.md (no browser needed).

- no Chinese text uses a variant the glossary lists as "not used";
- for a row marked "paired", a Chinese text whose English text uses the English term uses the Chinese term;
- layers, blocks and heads count from 0, so no Chinese text says 第 0 or 第 {layer} / 第 {head} / 第 {n} 个块.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEXT_DIR = ROOT / "static" / "text"
GLOSSARY = ROOT / "docs" / "GLOSSARY.md"
PAIRS = [("en.json", "zh.json"), ("lab.en.json", "lab.zh.json"), ("shared.en.json", "shared.zh.json")]
PLACEHOLDER = re.compile(r"\{\w+\}")
# 第 before a number counted from 0: a literal 0, or a placeholder holding a layer, block, head or pair index
ZERO_COUNTED = re.compile(r"第\s*(?:0(?!\.)|\{(?:layer|head|h|kvh|kv|pair|block)\}|\{n\}\s*(?:个块|层|个头))")


@dataclass(frozen=True)
class Row:
    en: str
    zh: list[str]
    avoid: list[str]
    paired: bool


def rows() -> list[Row]:
    out = []
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] in ("English", "") or set(cells[0]) <= {"-"}:
            continue
        zh = [z.strip() for z in cells[1].split(",")]
        out.append(Row(cells[0], zh, re.findall(r"`([^`]+)`", cells[2]), cells[3] == "paired"))
    return out


def strings(name: str) -> dict[str, str]:
    data = json.loads((TEXT_DIR / name).read_text(encoding="utf-8"))
    out: dict[str, str] = {}
    for section, values in data.items():
        if isinstance(values, dict):
            out.update({f"{section}.{k}": v for k, v in values.items() if isinstance(v, str)})
    return out


def english_term(row: Row) -> re.Pattern[str]:
    """The row's English word (before any parenthesis or slash), as a whole word, plural allowed."""
    word = re.split(r"[(/]", row.en)[0].strip()
    return re.compile(rf"(?<![\w-]){re.escape(word)}(?:s|es)?(?![\w-])", re.I)


def test_the_glossary_has_its_rows() -> None:
    table = rows()
    assert len(table) >= 30
    words = {r.en.split(" ")[0] for r in table}
    assert {"token", "query", "key", "value", "nats", "ablate"} <= words, words


@pytest.mark.parametrize("pair", PAIRS, ids=[p[1] for p in PAIRS])
def test_chinese_texts_use_the_glossary(pair: tuple[str, str]) -> None:
    en, zh = strings(pair[0]), strings(pair[1])
    problems = []
    for row in rows():
        for variant in row.avoid:
            problems += [f"{key}: uses {variant!r} (glossary: {row.zh})" for key, text in zh.items() if variant in text]
        if row.paired:
            term = english_term(row)
            for key, text in en.items():
                theirs = zh.get(key, "")
                if term.search(PLACEHOLDER.sub("", text)) and not any(z in theirs for z in row.zh):
                    problems.append(f"{key}: English says {row.en!r}, Chinese lacks {row.zh}: {theirs}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", ["zh.json", "lab.zh.json", "shared.zh.json"])
def test_chinese_counts_layers_blocks_and_heads_from_zero_by_name(name: str) -> None:
    bad = {key: text for key, text in strings(name).items() if ZERO_COUNTED.search(text)}
    assert not bad, bad


def test_the_zero_check_catches_what_it_should() -> None:
    for text in ("第 0 层", "第 {layer} 层", "第 {head} 个头", "第 {n} 个块", "第0个头"):
        assert ZERO_COUNTED.search(text), text
    for text in ("第 {n} 步，共 {total} 步", "第 1 步", "第 {n} 章", "层 0 · 头 {head}"):
        assert not ZERO_COUNTED.search(text), text
