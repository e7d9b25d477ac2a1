"""On a projector at 1280×720 (issue 41, item 2; review 4 finding 15): every chart a chapter opens in presentation
mode prints its tick labels and cell numbers at 12 px or more, in EN and ZH, and no map's title is cut short. Measured
as the browser draws them: the computed font size of each SVG text of the charts' axes and cells."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.helpers import open_page
from tests.browser.teach_models import CHAPTER_IDS

pytestmark = pytest.mark.browser

MIN_PX = 12

# every drawn text of an axis's ticks (Plotly's g.xtick, g.x5tick, ...; not the colour bar's, g.<id>cbtick...) and
# of a heatmap's cells (g.heatmap-label), with its computed size; and each map's title (the grid's annotations)
TEXTS = r"""() => { const out = [];
  for (const plot of document.querySelectorAll('#panel .js-plotly-plot')) {
    for (const e of plot.querySelectorAll('svg text')) {
      if (!e.textContent.trim() || e.getBoundingClientRect().width === 0) continue;
      const cls = e.parentElement.getAttribute('class') || '';
      const kind = /^[xy]\d*tick$/.test(cls) ? 'tick' : cls === 'heatmap-label' ? 'cell'
        : e.classList.contains('annotation-text') ? 'title' : null;
      if (kind) out.push([kind, e.textContent, parseFloat(getComputedStyle(e).fontSize)]);
    }
  }
  return out; }"""


@pytest.fixture(scope="module")
def chapters_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The shipped models (tiny-gpt, tiny-translator) and SmolLM2 where its package is installed: the models the
    chapters open, so the charts have the chapters' own sizes (SmolLM2's 9 heads in the grids of chapters 8, 14)."""
    from app.catalogue import add_smollm2
    from tests.browser.models import ServerThread
    from tests.conftest import free_port

    srv = ServerThread(free_port(), tmp_path_factory.mktemp("projector-text"), extra_models=True)
    add_smollm2(srv.registry)
    yield srv.start()
    srv.stop()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_chapter_reads_from_the_back_of_the_room(chapters_server: Any, watched: Any, lang: str) -> None:
    page = watched.page
    page.set_viewport_size({"width": 1280, "height": 720})
    page.set_default_timeout(120000)  # SmolLM2 loads on the first chapter that needs it
    small: dict[str, list[Any]] = {}
    cut: dict[str, list[str]] = {}
    measured = 0
    for cid in CHAPTER_IDS:
        open_page(page, chapters_server.url, chapter=cid, lang=lang, present=1)
        texts = page.evaluate(TEXTS)
        measured += sum(kind in ("tick", "cell") for kind, _, _ in texts)
        under = [(kind, text, size) for kind, text, size in texts if kind in ("tick", "cell") and size < MIN_PX]
        if under:
            small[cid] = under[:4]
        titles = [text for kind, text, _ in texts if kind == "title" and text.endswith("…")]
        if titles:
            cut[cid] = titles
    assert measured > 100, measured  # the charts were there to measure
    assert not small, small
    assert not cut, cut
    assert not watched.errors, watched.errors
