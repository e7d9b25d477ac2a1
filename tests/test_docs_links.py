"""README.md and docs/*.md: every relative link and image points at a file that exists, every #anchor at a
heading of its target, every doc is reachable from the README, and the README stays short (≤ 200 lines)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [ROOT / "README.md", *DOCS]
README_MAX_LINES = 200

LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
CODE_SPAN = re.compile(r"`[^`\n]*`")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)
EXTERNAL = ("http://", "https://", "mailto:")


def prose(markdown: str) -> str:
    """The text with fenced blocks and code spans removed: a link written as code is not a link."""
    return CODE_SPAN.sub("", FENCE.sub("", markdown))


def links(markdown: str) -> list[str]:
    return [target for target in LINK.findall(prose(markdown)) if not target.startswith(EXTERNAL)]


def anchors(markdown: str) -> set[str]:
    """GitHub's heading ids: lower case, punctuation dropped, spaces to hyphens, repeats numbered."""
    slugs: set[str] = set()
    repeats: dict[str, int] = {}
    for heading in HEADING.findall(FENCE.sub("", markdown)):
        text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        repeats[slug] = repeats.get(slug, -1) + 1
        slugs.add(f"{slug}-{repeats[slug]}" if repeats[slug] else slug)
    return slugs


def broken(page: Path) -> list[str]:
    """The links of one page that resolve to nothing, each with the reason."""
    problems = []
    for target in links(page.read_text(encoding="utf-8")):
        path, _, fragment = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            problems.append(f"{target}: no such file")
        elif fragment and file.suffix == ".md" and fragment not in anchors(file.read_text(encoding="utf-8")):
            problems.append(f"{target}: no heading #{fragment} in {file.name}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken(page) == []


def test_the_checker_finds_broken_links(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("# A heading, with `code`\n\n## A heading, with `code`\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](there.md) [ok](there.md#a-heading-with-code) [ok](there.md#a-heading-with-code-1) [web](https://x.y)\n"
        "![gone](images/none.png) [gone](missing.md) [bad anchor](there.md#nope) `[code](not-a-link.md)`\n"
        "```\n[fenced](not-a-link-either.md)\n```\n",
        encoding="utf-8",
    )
    assert broken(page) == [
        "images/none.png: no such file",
        "missing.md: no such file",
        "there.md#nope: no heading #nope in there.md",
    ]


def test_the_readme_links_every_doc_and_stays_short() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    linked = {(ROOT / target.partition("#")[0]).resolve() for target in links(readme)}
    assert [doc.name for doc in DOCS if doc.resolve() not in linked] == []
    assert len(readme.splitlines()) <= README_MAX_LINES
    assert "make run" in readme and "make test" in readme
