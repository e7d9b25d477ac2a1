"""The front end's layout rules, without a browser:

- one list of lab panels (app/lab_panels.py): the page the server renders, the JS panel index and
  the lab's texts follow it, and the page is readable before its script runs (titles, not ids);
- both pages run the shared modules (static/js/shared): one page loop, one URL writer, one fetch
  wrapper, one intervention builder; the lab reaches into no explorer panel;
- no inline CSS (no style attribute or <style> in a template, no style set from a script);
- every relative import names a file and an export that exist.
"""

from __future__ import annotations

import html as markup
import json
import posixpath
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.lab_panels import LAB_PANELS, lab_panel_names
from lessons.languages import LANGS

ROOT = Path(__file__).resolve().parents[2]
JS = ROOT / "static" / "js"
SCRIPTS = sorted(JS.rglob("*.js"))
IMPORT = re.compile(r'^import\s+(?:\{([^}]*)\}|(\w+))\s+from\s+"(\.{1,2}/[^"]+)";', re.M)
EXPORT = re.compile(r"^export (?:async )?(?:function\*?|const|let|class) ([\w$]+)", re.M)


def rel(path: Path) -> str:
    return path.relative_to(JS).as_posix()


def imports(path: Path) -> list[tuple[list[str], Path]]:
    """(names, target file) of each relative import; a default import is named "default"."""
    out = []
    for names, _default, target in IMPORT.findall(path.read_text(encoding="utf-8")):
        listed = [n.split(" as ")[0].strip() for n in names.split(",") if n.strip()] if names else ["default"]
        out.append((listed, Path(posixpath.normpath(posixpath.join(path.parent.as_posix(), target)))))
    return out


def lab_words(lang: str) -> dict[str, str]:
    return dict(json.loads((ROOT / "static" / "text" / f"lab.{lang}.json").read_text(encoding="utf-8"))["ui"])


@pytest.mark.parametrize("path", ["/", "/lab"])
def test_the_page_gets_the_one_list_of_languages(client: TestClient, path: str) -> None:
    """The languages are listed once (lessons/languages.py): each page carries them, and the page script reads them
    from there (static/js/shared/i18n.js) instead of listing its own."""
    found = re.search(r'<html lang="\w+" data-langs="([^"]*)">', client.get(path).text)
    assert found is not None and tuple(found.group(1).split(" ")) == LANGS
    i18n = (JS / "shared" / "i18n.js").read_text(encoding="utf-8")
    assert "dataset.langs" in i18n and not re.search(r'\[\s*"en"\s*,', i18n)
    listing = [rel(p) for p in SCRIPTS if re.search(r'\[\s*"en"\s*,\s*"zh"\s*\]', p.read_text(encoding="utf-8"))]
    assert not listing, listing


def test_the_js_panel_index_lists_no_panel() -> None:
    # the index imports panels/<name>.js by the page's name (the order and the list are the Python list's)
    index = (JS / "lab" / "panels" / "index.js").read_text(encoding="utf-8")
    assert "import(`./${name}.js`)" in index
    assert not [name for name in lab_panel_names() if f'"{name}"' in index or f"./{name}.js" in index]
    for panel in LAB_PANELS:  # each has its words in both languages
        for lang in LANGS:
            words = lab_words(lang)
            assert words.get(panel.title_key) and words.get(panel.lead_key), (lang, panel.name)
    # static/js/lab/panels/ holds the panels and their index only (what they share lives in static/js/lab/), each
    # module named in snake_case like its panel
    modules = {p.stem for p in (JS / "lab" / "panels").glob("*.js")}
    assert modules == {*lab_panel_names(), "index"}, modules ^ {*lab_panel_names(), "index"}
    assert all(re.fullmatch(r"[a-z0-9_]+", p.stem) for p in SCRIPTS), [p.name for p in SCRIPTS if "-" in p.stem]


@pytest.mark.parametrize("lang", LANGS)
def test_the_lab_page_lists_the_python_list_in_its_language_and_shows_one_panel(client: TestClient, lang: str) -> None:
    html = client.get(f"/lab?lang={lang}&panel=masks").text
    words = lab_words(lang)
    sections = re.findall(r'<section id="panel-(\w+)" class="lab-panel" data-panel="(\w+)"[^>]*?( hidden)?>', html)
    assert [name for name, _, _ in sections] == lab_panel_names()
    assert [name for name, _, hidden in sections if not hidden] == ["masks"]
    links = re.findall(r'<a href="/lab\?panel=(\w+)" data-panel-link="\w+"[^>]*>([^<]*)</a>', html)
    # the table of contents reads as titles
    assert [(n, markup.unescape(t)) for n, t in links] == [(p.name, words[p.title_key]) for p in LAB_PANELS]
    assert f'<html lang="{lang}" ' in html
    assert f"<title>{words['masks_title']} · {words['page_title']}</title>" in markup.unescape(html)
    assert words["masks_lead"] in markup.unescape(html)
    # readable before the script runs: every data-lab-i18n element already holds its words
    for key, shown in re.findall(r'data-lab-i18n="(\w+)"[^>]*>([^<]*)<', html):
        assert markup.unescape(shown) == words[key], key
    # an unknown panel opens the first
    other = client.get("/lab?panel=nope").text
    shown = re.findall(r'<section id="panel-\w+" class="lab-panel" data-panel="(\w+)"[^>]*>', other)
    tags = re.findall(r'<section id="panel-\w+" class="lab-panel"[^>]*>', other)
    assert [name for name, tag in zip(shown, tags, strict=True) if " hidden" not in tag] == [LAB_PANELS[0].name]


def test_no_script_types_a_lab_path_or_lists_the_panels_fields() -> None:
    # a panel asks where the server says (templates/lab.html: data-path), and declares its own URL fields
    assert [rel(p) for p in SCRIPTS if "/api/lab" in p.read_text(encoding="utf-8")] == []
    state = (JS / "lab" / "state.js").read_text(encoding="utf-8")
    assert not [name for name in lab_panel_names() if name in state], "lab/state.js names no panel"
    events = (JS / "lab" / "events.js").read_text(encoding="utf-8")
    assert not re.search(r"\b\w*(layer|Layer|head|Head)\w*: ", events), "a model switch resets no field by name"
    for panel in LAB_PANELS:
        module = (JS / "lab" / "panels" / f"{panel.name}.js").read_text(encoding="utf-8")
        assert re.search(r"^  fields: \{", module, re.M), f"{panel.name}.js declares no fields"


def test_every_relative_import_names_a_file_and_an_export() -> None:
    bad = []
    for path in SCRIPTS:
        for names, target in imports(path):
            if not target.is_file():
                bad.append(f"{rel(path)}: {target} is missing")
                continue
            text = target.read_text(encoding="utf-8")
            exported = set(EXPORT.findall(text)) | ({"default"} if "export default" in text else set())
            bad += [f"{rel(path)}: {target.name} exports no {name}" for name in names if name not in exported]
    assert not bad, bad


def test_the_pages_share_one_loop_one_fetch_one_url_and_one_intervention_builder() -> None:
    shared = {rel(p) for p in (JS / "shared").glob("*.js")}
    assert {"shared/api.js", "shared/dom.js", "shared/plot.js", "shared/i18n.js", "shared/page.js",
            "shared/interventions.js", "shared/interventions_view.js"} <= shared
    for entry in ("navigate.js", "lab/navigate.js"):
        assert any(t == JS / "shared" / "page.js" and "pageLoop" in names for names, t in imports(JS / entry)), entry
    one_place = {  # what only one module may do
        r"\bhistory\.(replaceState|pushState)\(": "shared/page.js",
        r"\bfetch\(": {"shared/api.js", "shared/i18n.js"},
        r"\bablate_heads:": "shared/interventions.js",
        r"iv-(before|after)": "shared/interventions_view.js",  # one interventions view, for both pages
        r"\bclassList\.toggle\(\"busy\"": "shared/page.js",
    }
    for pattern, allowed in one_place.items():
        found = {rel(p) for p in SCRIPTS if re.search(pattern, p.read_text(encoding="utf-8"))}
        assert found <= ({allowed} if isinstance(allowed, str) else allowed), (pattern, found)
    assert not (JS / "lab" / "state.js").read_text(encoding="utf-8").count("URLSearchParams")
    for page in ("intervene.js", "lab/panels/interventions.js"):  # both load and draw the runs the one way
        used = {name for names, target in imports(JS / page) for name in names}
        assert {"loadBothRuns", "drawBothRuns"} <= used, page
    # one name per intervention, the API's (`shuffle`), everywhere; "reverse" only as an older link's alias
    kinds = re.search(r"export const KINDS = \[([^\]]*)\]", (JS / "shared" / "interventions.js").read_text())
    assert kinds and re.findall(r'"(\w+)"', kinds.group(1)) == ["no_scale", "no_mask", "window", "temperature",
                                                              "ablate", "shuffle"]
    for path in SCRIPTS:
        text = re.sub(r"ALIASES = \{[^}]*\}", "", path.read_text(encoding="utf-8"))
        assert not re.search(r"[\"'`]reverse[\"'`]|iv_reverse", text), rel(path)


def test_the_lab_reaches_into_no_explorer_module() -> None:
    # the chart cards: shared by both pages, kept where the explorer's teaching code edits it
    allowed = {JS / "board.js"}
    for path in (JS / "lab").rglob("*.js"):
        for _, target in imports(path):
            inside = target.is_relative_to(JS / "lab") or target.is_relative_to(JS / "shared")
            assert inside or target in allowed, f"{rel(path)} imports {target.relative_to(JS)}"
    for path in (JS / "shared").glob("*.js"):
        for _, target in imports(path):
            assert target.is_relative_to(JS / "shared"), f"{rel(path)} imports {target.relative_to(JS)}"


def test_no_inline_css() -> None:
    for template in (ROOT / "templates").glob("*.html"):
        html = template.read_text(encoding="utf-8")
        assert "<style" not in html and not re.search(r"\sstyle=", html), template.name
    for path in SCRIPTS:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"\.style\.|\.style\s*=|setAttribute\(\s*\"style\"|\"style\":|\bstyle:\s", text), rel(path)
