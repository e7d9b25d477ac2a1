"""Page speed where a person waits: time to the first chart (cold browser cache) and the latency of
one step (the → key to the next stage drawn), in Debian's headless Chromium against a real server
on loopback.

    .venv/bin/python bench/page_speed.py                      # this working tree
    .venv/bin/python bench/page_speed.py --baseline fbf1882   # a git ref beside it, in one run

With --baseline, the page of that commit (``git archive``, unpacked in a temporary folder, the same
weights) is served on a second port and measured the same way, interleaved with this tree, so both
columns see the same machine load. Goals (issue 13, item 5): first chart <= 2.0 s cold, step p95
<= 300 ms.

First chart: from navigation start (performance.timeOrigin) to the frame that paints the first
Plotly SVG in the stage panel: a MutationObserver (installed before the page's own scripts) sees
the SVG and stamps the next requestAnimationFrame, the frame whose paint shows it (stamped as that
frame starts: its style, layout and paint, a few ms to tens of ms, come after). Every load uses
a fresh browser context (empty HTTP cache). The server is warmed first (one load), so its model
loading is not counted. The "seen" column is the older measure: performance.now() when the test
driver (Playwright) had found the SVG and its evaluate() got its turn on the page's main thread, so
it also counts whatever the page runs right after that frame (since the loss curve under the
training slider is drawn one frame after the stage's charts, that drawing).

Step: an ArrowRight keydown dispatched in the page until the stage's data-rendered changes and
the next frame is painted (requestAnimationFrame, then a task after it); data-rendered changes
only after every chart of the stage is drawn, so a step is the whole stage, not its first chart.
Each step is a stage the browser has not fetched yet, so it includes the /api/trace round trip.

--model smollm2 measures the 30-layer GGUF model (issue 22: step p95 <= 300 ms) on an English
sentence, and the all-layers × heads overview: on the softmax stage of a new sentence, after its first
chart, a click on "All layers × heads" until the 270 maps are drawn (goal <= 1.5 s).

--phases splits each step of this tree into go()'s own measures (navigate.js): load (the view's
data: tokens, /api/trace, decoding, Plotly ready) and render (the sidebar and the charts, drawn
synchronously); the rest is the key event, the paint and the frame.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.load import free_port  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
GOAL_FIRST_CHART_S = 2.0
GOAL_STEP_P95_MS = 300.0
DEFAULT_PATH = "/?" + urllib.parse.urlencode(
    {"model": "tiny-gpt", "text": "我爱北京天安门广场。", "stage": "tokens", "lang": "en"})
SMOLLM2_TEXT = "The little dog ran to the old mill by the river. The little dog ran to the old"
SMOLLM2_PATH = "/?" + urllib.parse.urlencode(
    {"model": "smollm2", "text": SMOLLM2_TEXT, "stage": "tokens", "lang": "en"})
GOAL_OVERVIEW_S = 1.5

STEP_JS = """() => new Promise((resolve) => {
  const stage = document.getElementById('stage');
  const before = stage.dataset.rendered;
  const t0 = performance.now();
  const obs = new MutationObserver(() => {
    if (stage.dataset.rendered !== before) {
      obs.disconnect();
      requestAnimationFrame(() => setTimeout(() => resolve(performance.now() - t0), 0));
    }
  });
  obs.observe(stage, { attributes: true, attributeFilter: ['data-rendered'] });
  document.dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowRight', bubbles: true }));
})"""



@contextlib.contextmanager
def server(tree: Path, port: int, model: str = "tiny-gpt") -> Iterator[str]:
    """`transformer-explorer serve` from `tree` (its own app/, static/, templates/) on loopback; smollm2 only when
    it is the model measured (its background loading would be measured too), and then once it has loaded."""
    env = dict(os.environ, PYTHONPATH=str(tree), TE_WEIGHTS_DIR=str(ROOT / "model" / "weights"))
    cli = tree / "transformer_explorer" / "cli.py"  # a baseline from before the command line's own package: app/
    package = "transformer_explorer" if cli.is_file() else "app"
    cli = cli if cli.is_file() else tree / "app" / "cli.py"
    cmd = [sys.executable, "-c", f"import sys; from {package}.cli import main; sys.exit(main())", "serve",
           "--port", str(port), "--host", "127.0.0.1"]
    if model != "smollm2" and "--no-smollm2" in cli.read_text(encoding="utf-8"):
        cmd.append("--no-smollm2")
    proc = subprocess.Popen(cmd, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                with urllib.request.urlopen(f"{base}/api/models", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.2)
            if proc.poll() is not None:
                raise RuntimeError(f"server from {tree} exited with {proc.returncode}")
        else:
            raise RuntimeError("server did not start")
        for _ in range(900):
            with urllib.request.urlopen(f"{base}/api/health", timeout=10) as r:
                if model in json.loads(r.read())["loaded"]:
                    break
            time.sleep(1)
        else:
            raise RuntimeError(f"{model} did not load")
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def unpack(ref: str, into: Path) -> Path:
    """The tree of git ref `ref` (only what git archive gives: tracked files)."""
    data = subprocess.run(["git", "archive", "--format=tar", ref], cwd=ROOT, check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into


FIRST_FRAME_JS = """(() => {
  const look = () => {
    if (!document.querySelector('#panel .main-svg')) return;
    observer.disconnect();
    requestAnimationFrame(() => { window.__firstChartFrame = performance.now(); });
  };
  const observer = new MutationObserver(look);
  observer.observe(document, { childList: true, subtree: true });
})();"""


def first_chart(browser, url: str) -> tuple[float, float]:
    """Seconds from navigation start to the frame that paints the first chart, and to the moment
    the driver saw it (the older measure), in a fresh context (cold HTTP cache)."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        ctx.add_init_script(FIRST_FRAME_JS)
        page = ctx.new_page()
        page.goto(url, wait_until="commit")
        page.wait_for_selector("#panel .main-svg", timeout=60000)
        seen = float(page.evaluate("performance.now()")) / 1000
        page.wait_for_function("() => window.__firstChartFrame !== undefined", timeout=60000)
        return float(page.evaluate("window.__firstChartFrame")) / 1000, seen
    finally:
        ctx.close()


PHASES_JS = """() => {
  const g = document.getElementById('stage').dataset.rendered;
  const get = (phase) => performance.getEntriesByName(`go:${phase}:${g}`, 'measure').map((e) => e.duration)[0];
  return { stage: document.getElementById('stage').dataset.stage, load: get('load'), render: get('render') };
}"""


def steps(browser, url: str, n: int, phases: list | None = None) -> list[float]:
    """Milliseconds per → step over the first n stages of a freshly loaded page (with `phases`:
    each step's stage and go() measures appended to it; older pages without them give None)."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = ctx.new_page()
        page.goto(url)
        page.wait_for_selector("body[data-ready='1'] #panel .main-svg", timeout=60000)
        page.wait_for_timeout(300)
        out = []
        for _ in range(n):
            if page.evaluate("document.getElementById('next').disabled"):
                break
            out.append(float(page.evaluate(STEP_JS)))
            if phases is not None:
                phases.append({"ms": out[-1], **page.evaluate(PHASES_JS)})
        return out
    finally:
        ctx.close()


OVERVIEW_JS = """() => new Promise((resolve) => {
  const stage = document.getElementById('stage');
  const before = stage.dataset.rendered;
  const t0 = performance.now();
  const obs = new MutationObserver(() => {
    if (stage.dataset.rendered !== before) {
      obs.disconnect();
      requestAnimationFrame(() => setTimeout(() => resolve({ ms: performance.now() - t0,
        maps: document.querySelectorAll('#panel canvas.head-overview').length }), 0));
    }
  });
  obs.observe(stage, { attributes: true, attributeFilter: ['data-rendered'] });
  document.querySelector('#views button[data-view="layers"]').click();
})"""


def overview(browser, base: str, model: str, text: str) -> float:
    """Seconds from the click on "All layers × heads" to the frame that shows every head, on the softmax stage
    of layer 0 of a sentence the server has not traced, after its first chart (a fresh context)."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = ctx.new_page()
        query = urllib.parse.urlencode({"model": model, "text": text, "stage": "softmax", "layer": 0, "lang": "en"})
        page.goto(f"{base}/?{query}")
        page.wait_for_selector("body[data-ready='1'] #panel .main-svg", timeout=120000)
        page.wait_for_timeout(300)
        result = page.evaluate(OVERVIEW_JS)
        if not result["maps"]:
            raise RuntimeError("the overview drew no canvas")
        return float(result["ms"]) / 1000
    finally:
        ctx.close()


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    if not values:
        return float("nan")
    k = (len(values) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", help="a git ref to measure beside this working tree")
    parser.add_argument("--loads", type=int, default=5, help="cold loads per tree")
    parser.add_argument("--steps", type=int, default=24, help="→ steps per tree")
    parser.add_argument("--phases", action="store_true", help="print where each step of this tree goes (load / render)")
    parser.add_argument("--path", help=f"the page to load (default: {DEFAULT_PATH}; "
                                       f"with --model smollm2: {SMOLLM2_PATH})")
    parser.add_argument("--model", default="tiny-gpt", help="the model the page shows (tiny-gpt or smollm2)")
    parser.add_argument("--overviews", type=int, default=3, help="all-layers overview draws per tree (new sentences)")
    args = parser.parse_args()
    args.path = args.path or (SMOLLM2_PATH if args.model == "smollm2" else DEFAULT_PATH)
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="page_speed_"))
    trees = {"this tree": ROOT}
    if args.baseline:
        trees = {f"baseline {args.baseline}": unpack(args.baseline, tmp / "baseline"), **trees}
    results: dict[str, dict[str, list[float]]] = {name: {"first": [], "seen": [], "step": [], "overview": []}
                                                 for name in trees}
    phases: list[dict] = []
    try:
        with contextlib.ExitStack() as stack, sync_playwright() as p:
            bases = {name: stack.enter_context(server(tree, free_port(), args.model)) for name, tree in trees.items()}
            browser = p.chromium.launch(executable_path=CHROMIUM,
                                        args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
            for base in bases.values():  # warm each server: models loaded, first traces cached
                first_chart(browser, base + args.path)
            for _ in range(args.loads):  # interleaved, so both trees see the same load on the machine
                for name, base in bases.items():
                    painted, seen = first_chart(browser, base + args.path)
                    results[name]["first"].append(painted)
                    results[name]["seen"].append(seen)
            for name, base in bases.items():
                results[name]["step"] = steps(browser, base + args.path, args.steps,
                                              phases if args.phases and name == "this tree" else None)
            sentence = SMOLLM2_TEXT if args.model == "smollm2" else "The cat sat on the mat. The cat sat on the"
            for i in range(args.overviews):
                for name, base in bases.items():
                    results[name]["overview"].append(overview(browser, base, args.model, f"{sentence} {'again ' * i}"))
            browser.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"page speed of {args.model}, Chromium headless, {os.cpu_count()} CPUs, {args.loads} cold loads, "
          f"up to {args.steps} steps")
    heads = ("first chart p50", 16), ("max", 8), ("seen p50", 10), ("step p50", 10), ("step p95", 10), ("n steps", 8)
    print(f"{'':24} " + " ".join(f"{head:>{width}}" for head, width in heads))
    for name, r in results.items():
        print(f"{name:24} {statistics.median(r['first']):>14.2f} s {max(r['first']):>6.2f} s "
              f"{statistics.median(r['seen']):>8.2f} s "
              f"{pct(r['step'], 0.5):>7.0f} ms {pct(r['step'], 0.95):>7.0f} ms {len(r['step']):>8}")
    if phases:
        print("\nthis tree, step by step (go() measures; other = key event, paint, frame)")
        print(f"{'stage':16} {'step':>7} {'load':>7} {'render':>7} {'other':>7}")
        for row in phases:
            load, render = row.get("load"), row.get("render")
            other = row["ms"] - (load or 0) - (render or 0)
            cells = [f"{v:>7.0f}" if isinstance(v, (int, float)) else f"{'-':>7}"
                     for v in (row["ms"], load, render, other)]
            print(f"{str(row.get('stage')):16} {' '.join(cells)}")
        print()
    print(f"{'goal':24} {GOAL_FIRST_CHART_S:>14.2f} s {'':>8} {'':>10} {'':>10} {GOAL_STEP_P95_MS:>7.0f} ms")
    for name, r in results.items():
        if r["overview"]:
            print(f"{name:24} all layers x heads after the first chart: p50 {statistics.median(r['overview']):.2f} s"
                  f"  max {max(r['overview']):.2f} s  ({len(r['overview'])} new sentences; "
                  f"goal <= {GOAL_OVERVIEW_S} s)")
    last = results["this tree"]
    ok = statistics.median(last["first"]) <= GOAL_FIRST_CHART_S and pct(last["step"], 0.95) <= GOAL_STEP_P95_MS
    print("this tree meets both goals" if ok else "this tree misses a goal")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
