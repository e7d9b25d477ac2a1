"""What smollm2 costs a server: its resident memory with smollm2 loaded against one without it, and whether
its loading (in the background after startup) holds up requests to the other models.

    python bench/server_memory.py [--requests 40]

Two servers, one after the other, as `transformer-explorer serve` starts them (one process, minilm off):
1. with smollm2: tiny-gpt's first views on new texts sent *while smollm2 loads* (timed, and the time it took
   to load seen from /api/health); the RSS; a few first views of smollm2 itself; the RSS again; then
   quiet tiny-gpt views and the final RSS;
2. without smollm2 (--no-smollm2): the same number of tiny-gpt first views, then the same quiet ones and
   the RSS, so both servers' trace caches hold the same tiny-gpt traces.
Issue 22's goals: RSS with smollm2 <= RSS without + 800 MB; tiny-gpt's p95 while smollm2 loads stays near
its p95 without (the loading runs in a worker thread; the event loop keeps answering).
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.load import free_port, start_server  # noqa: E402

GOAL_EXTRA_MB = 800
SENTENCE = "It is a truth universally acknowledged that a single man in possession of a good fortune must be in want"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def tiny_gpt_views(client: httpx.Client, n: int, tag: str, until: float | None = None) -> list[float]:
    """First views of new texts on tiny-gpt: n of them, or as many as fit before `until` (at least n)."""
    times: list[float] = []
    i = 0
    while i < n or (until is not None and time.monotonic() < until):
        start = time.perf_counter()
        response = client.post("/api/trace", json={"model": "tiny-gpt", "text": f"{SENTENCE} {tag} {i}"})
        response.raise_for_status()
        times.append(time.perf_counter() - start)
        i += 1
    return times


def loaded(client: httpx.Client) -> list[str]:
    return list(client.get("/api/health").json()["loaded"])


def run_server(with_smollm2: bool, requests: int, views_before: int = 0) -> dict[str, float]:
    """One server's figures. `views_before`: how many tiny-gpt first views the server without smollm2 gets
    before its quiet ones, so both servers cache the same tiny-gpt traces (the server with smollm2 gets
    its views while smollm2 loads)."""
    port = free_port()
    server = start_server(port, processes=1, smollm2=with_smollm2)
    out: dict[str, float] = {}
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=300) as client:
            if with_smollm2:
                start = time.monotonic()
                during: list[float] = []
                while "smollm2" not in loaded(client):  # tiny-gpt's requests while smollm2 loads
                    during += tiny_gpt_views(client, 1, f"loading {len(during)}")
                    if time.monotonic() - start > 900:
                        raise RuntimeError("smollm2 did not load in 15 minutes")
                out["load_s"] = time.monotonic() - start
                out["during_n"] = len(during)
                out["during_p50_ms"] = statistics.median(during) * 1e3
                out["during_p95_ms"] = p95(during) * 1e3
                time.sleep(2)
                out["rss_loaded_mb"] = rss_mb(server.pid)
                for i in range(5):
                    client.post("/api/trace", json={"model": "smollm2", "text": f"{SENTENCE} {i}"}).raise_for_status()
                out["rss_traced_mb"] = rss_mb(server.pid)
            else:
                tiny_gpt_views(client, views_before, "loading")
                time.sleep(5)
                out["rss_loaded_mb"] = rss_mb(server.pid)
            quiet = tiny_gpt_views(client, requests, "quiet")
            out["quiet_p50_ms"] = statistics.median(quiet) * 1e3
            out["quiet_p95_ms"] = p95(quiet) * 1e3
            out["rss_mb"] = rss_mb(server.pid)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=40)
    args = parser.parse_args()
    with_ = run_server(True, args.requests)
    without = run_server(False, args.requests, views_before=int(with_["during_n"]))
    extra = with_["rss_mb"] - without["rss_mb"]
    loaded_extra = with_["rss_loaded_mb"] - without["rss_loaded_mb"]
    traces = with_["rss_traced_mb"] - with_["rss_loaded_mb"]
    print(f"server RSS without smollm2 {without['rss_mb']:7.0f} MB   with smollm2 loaded {with_['rss_mb']:7.0f} MB"
          f"   extra {extra:5.0f} MB   goal <= {GOAL_EXTRA_MB} MB: {extra <= GOAL_EXTRA_MB}")
    print(f"  of which: smollm2 loaded, before any request to it {loaded_extra:5.0f} MB; its 5 cached traces "
          f"{traces:5.0f} MB (the trace cache's byte budget bounds these for every model alike)")
    print(f"smollm2 loaded in the background in {with_['load_s']:.1f} s; meanwhile {with_['during_n']:.0f} tiny-gpt "
          f"first views: p50 {with_['during_p50_ms']:.1f} ms  p95 {with_['during_p95_ms']:.1f} ms")
    print(f"tiny-gpt first views, server without smollm2: p50 {without['quiet_p50_ms']:.1f} ms  "
          f"p95 {without['quiet_p95_ms']:.1f} ms; with smollm2 loaded: p50 {with_['quiet_p50_ms']:.1f} ms  "
          f"p95 {with_['quiet_p95_ms']:.1f} ms")


if __name__ == "__main__":
    main()
