"""`transformer-explorer export-site DIR`: the lessons as a static site, recorded from the running code.

The app is started on a free local port, the real pages walk the lesson path in headless Chromium
(static_site/record.py), and what they asked is written beside the pages:

    DIR/index.html, DIR/lab.html         the two pages, rendered from templates/ with relative places
    DIR/static/js/explorer.js, lab.js    each page's modules as one classic script (static_site/bundle.py)
    DIR/static/site.js                   the loader of recorded answers (window.TE_SITE)
    DIR/static/css, vendor, favicon      as served, Plotly's cartesian bundle included
    DIR/data/index.js                    request key -> data file, and what was recorded (models, date, version)
    DIR/data/<hash>.js                   one answer each: TE_SITE.put(key, "<the server's exact response body>")

Nothing is fetched: every file is a <script src> or a stylesheet inside DIR, so it opens from file:// as
from any static host.
"""

from __future__ import annotations

import datetime
import json
import shutil
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from app.lab_panels import LAB_PANELS, lab_panel_named, lab_panel_names
from app.pages import PAGE_CONTEXT, PLOTLY_CARTESIAN, STATIC_DIR, templates
from app.settings import Settings
from lessons import chapters as lessons
from static_site.bundle import bundle
from static_site.data_files import data_file, data_text
from static_site.record import Recording, record_lessons

BUDGET_BYTES = 40 * 1024 * 1024  # docs/TEACHERS.md: the whole site fits a slow school network and any LMS
SITE_MARK = "data/index.js"  # a folder holding this is a site written here before, which may be replaced
STATIC_COPIED = ("css", "vendor", "favicon.svg")


@dataclass
class SiteSummary:
    folder: Path
    bytes: int
    files: int
    answers: int
    models: list[str]
    refused: list[str]  # requests the server answered with an error while recording (not in the site)
    errors: list[str]  # console errors while recording
    seconds: float
    walked: list[str]  # per chapter and language: what the walk recorded (static_site/record.py)
    slow: list[tuple[float, str]]  # the answers that took longest to compute, (seconds, request key)

    def line(self) -> str:
        return (f"site: {self.folder} — {self.bytes / 1e6:.1f} MB in {self.files} files (budget "
                f"{BUDGET_BYTES / 1e6:.1f} MB), {self.answers} recorded answers from {', '.join(self.models)}, "
                f"built in {self.seconds:.0f} s")


def version() -> str:
    return metadata.version("transformer-explorer")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalServer:
    """The app on 127.0.0.1 in a daemon thread, for the recording only."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.url = f"http://127.0.0.1:{port}"

    def __enter__(self) -> LocalServer:
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the recording server did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def render_pages() -> dict[str, str]:
    """index.html and lab.html as a site serves them: the live templates, with relative places and bundles."""
    site = {"root": "", "explorer_href": "index.html", "lab_href": "lab.html", "plotly": PLOTLY_CARTESIAN.lstrip("/")}
    words = json.loads((STATIC_DIR / "text" / "lab.en.json").read_text(encoding="utf-8"))["ui"]
    explorer = templates.env.get_template("index.html").render(
        chapters=lessons.for_page(), modules=[], site="explorer.js", **PAGE_CONTEXT, **site)
    lab = templates.env.get_template("lab.html").render(
        panels=LAB_PANELS, shown=lab_panel_named(None), lang="en", say=words.__getitem__,
        modules=[], site="lab.js", **PAGE_CONTEXT, **site)
    return {"index.html": explorer, "lab.html": lab}


def scripts() -> dict[str, str]:
    """Each page's classic script; the lab's holds every panel, which its panels/index.js loads by name."""
    js = STATIC_DIR / "js"
    return {"explorer.js": bundle(js, "main.js"),
            "lab.js": bundle(js, "lab/main.js", [f"lab/panels/{name}.js" for name in lab_panel_names()])}


def text_answers() -> dict[str, bytes]:
    """Every text file, under the key i18n.js asks it by (it is a GET of /static/text/<name>.json)."""
    return {f"GET /static/text/{p.name} ": p.read_bytes() for p in sorted((STATIC_DIR / "text").glob("*.json"))}


def models_of(answers: dict[str, bytes]) -> list[str]:
    prefix = "GET /api/models/"
    return sorted({key[len(prefix):].rsplit(" ", 1)[0] for key in answers if key.startswith(prefix)})


def write_site(folder: Path, answers: dict[str, bytes], recorded_on: str,
               walked: Sequence[str] = ()) -> tuple[int, int]:
    """Write the site into `folder` (emptied first when it is a site or empty); returns (bytes, files).
    `walked`: what each chapter recorded, written to RECORDED.txt for whoever hosts it."""
    if folder.exists() and any(folder.iterdir()) and not (folder / SITE_MARK).is_file():
        raise FileExistsError(f"{folder} is not empty and holds no site: choose an empty or new folder")
    if folder.exists():
        shutil.rmtree(folder)
    (folder / "data").mkdir(parents=True)
    for name, html in render_pages().items():
        (folder / name).write_text(html, encoding="utf-8")
    for name in STATIC_COPIED:
        source = STATIC_DIR / name
        if source.is_dir():
            shutil.copytree(source, folder / "static" / name)
        else:
            shutil.copy2(source, folder / "static" / name)
    (folder / "static" / "js").mkdir(parents=True)
    for name, text in scripts().items():
        (folder / "static" / "js" / name).write_text(text, encoding="utf-8")
    shutil.copy2(Path(__file__).with_name("site_runtime.js"), folder / "static" / "site.js")
    every = {**text_answers(), **answers}
    index = {}
    for key, body in sorted(every.items()):
        index[key] = data_file(key)
        (folder / index[key]).write_text(data_text(key, body), encoding="ascii")
    about = {"models": models_of(answers), "date": recorded_on, "version": version()}
    (folder / SITE_MARK).write_text(
        f"TE_SITE.setIndex({json.dumps(index, ensure_ascii=True, indent=0)}, {json.dumps(about)});\n", encoding="ascii")
    (folder / "RECORDED.txt").write_text(
        f"Recorded by Transformer Explorer {about['version']} on {recorded_on} from {', '.join(about['models'])}.\n"
        "Each chapter, in each language: its view (model, sentence, stage, layer) with its claims, what else was\n"
        "recorded, and the lab panels it links. Any other view, sentence or model needs the server (make run).\n\n"
        + "".join(f"{line}\n" for line in walked), encoding="utf-8")
    files = [p for p in folder.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files), len(files)


def export_site(folder: Path, app: Any, log: Callable[[str], None] = print, stepper: bool = True,
                chapters: list[str] | None = None, browser: Any = None, examples: bool = True) -> SiteSummary:
    """Record the lesson path on `app` (the FastAPI app, its models loaded) and write the site into `folder`;
    without `stepper`, each chapter's own view only (the tests' quicker build); `chapters`: these only (ids);
    `browser`: a Playwright browser to record with (the tests'), else one started here; without `examples`, no
    model's example sentences."""
    started = time.monotonic()
    with LocalServer(app) as server:
        log(f"recording the lessons from {server.url} ...")
        recording: Recording = record_lessons(server.url, chapters or [c.id for c in lessons.chapters()], log,
                                              stepper=stepper, browser=browser, examples=examples)
    size, files = write_site(folder, recording.answers, datetime.date.today().isoformat(), recording.walked)
    return SiteSummary(folder, size, files, len(recording.answers), models_of(recording.answers), recording.failed,
                       recording.errors, time.monotonic() - started, recording.walked,
                       sorted(recording.slow, reverse=True))


def export_with_settings(folder: Path, settings: Settings) -> int:
    """The CLI's one call: load the models as `serve` would, record, write, print the size; 1 over the budget."""
    from app.catalogue import build_registry
    from app.factory import create_app

    summary = export_site(folder, create_app(settings, build_registry(settings)))
    for line in summary.walked:
        print(f"  recorded {line}")
    for seconds, key in summary.slow[:10]:
        print(f"  slowest answers: {seconds:.1f} s {key[:150]}")
    for line in summary.refused:
        print(f"  not recorded (the server refused it): {line}")
    for line in summary.errors:
        print(f"  console error while recording: {line}")
    print(summary.line())
    if summary.bytes > BUDGET_BYTES:
        print(f"site: over the budget of {BUDGET_BYTES / 1e6:.1f} MB")
        return 1
    return 0
