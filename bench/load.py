"""A class at once: mixed explorer traffic from many clients, then a burst, against a live server on loopback.

    python bench/load.py [--clients 50] [--seconds 60] [--processes 1 2] [--burst 200]
    python bench/load.py --url http://127.0.0.1:8080    # a server already running (deploy/compose.yaml's proxy)

For each process count it starts `transformer-explorer serve` (shipped models, no minilm) on a free
loopback port and runs:

- **mixed traffic**: `--clients` bounded async clients, each looping for `--seconds` with 0.2-1.0 s of
  think time: open a sentence (first view), step through stages, one layer's attention, the next-token
  table, tokenize, a model's description — as the page does. Sentences come from a fixed pool in both
  languages, so some are cached and some are new, like a class. Prints responses, errors, p50/p95 and
  throughput, and the server's RSS every 10 s (flat once the caches are full).
- **burst**: `--burst` full traces of new sentences at the same instant: every one must be answered or
  refused at once with 503 + Retry-After; none may time out.

Goals printed beside the measurements: zero errors, p95 <= 800 ms, RSS flat, the burst without timeouts.
Every request loop is bounded in count and time and only targets 127.0.0.1, or the server named by --url
(then nothing is started, and the server's RSS is not sampled: it may be in containers or on another machine).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
SENTENCES = [
    "The animal didn't cross the street because it was too tired",
    "我爱北京天安门广场。", "小明把书给了小红，因为她要复习", "我 爱 你",
    "It was a truth universally acknowledged", "The cat sat on the mat and looked at the dog",
    "春眠不觉晓，处处闻啼鸟。", "Attention is all you need, they said, and then they trained it",
    "学而时习之，不亦说乎？", "She gave him the book because he asked for it",
]
STAGES = ["blocks.0.attn.hook_pattern", "blocks.1.attn.hook_scores_scaled", "blocks.0.mlp.hook_post",
          "blocks.2.hook_resid_post", "hook_logits"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rss_mb(pid: int) -> float:
    """Resident memory of the server and its children (worker processes), in MB."""
    total = 0
    pids = [pid] + [int(p) for p in subprocess.run(["pgrep", "-P", str(pid)], capture_output=True,
                                                    text=True).stdout.split()]
    for one in pids:
        try:
            fields = Path(f"/proc/{one}/status").read_text().split("VmRSS:")[1].split()
            total += int(fields[0])
        except (OSError, IndexError):
            pass
    return total / 1024


def start_server(port: int, processes: int, smollm2: bool = False) -> subprocess.Popen[bytes]:
    """`serve` on loopback (without minilm; without smollm2 unless asked: its background loading would be
    measured too)."""
    command = [sys.executable, "-m", "transformer_explorer", "serve",
               "--port", str(port), "--no-minilm", "--log-level", "warning",
               "--processes", str(processes), *([] if smollm2 else ["--no-smollm2"])]
    server = subprocess.Popen(command, cwd=ROOT, start_new_session=True)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=2).status_code == 200:
                return server
        except httpx.HTTPError:
            time.sleep(0.3)
    os.killpg(server.pid, signal.SIGTERM)
    raise RuntimeError("the server did not start")


async def one_client(client: httpx.AsyncClient, until: float, rng: random.Random, log: list[tuple[float, int, float]],
                     shape: tuple[int, int]) -> None:
    """One student: a first view, two steps, then attention / predict / tokenize / model info.

    shape: (layers, heads) of the model on the server, so every request is a valid one."""
    async def call(method: str, path: str, body: dict[str, object] | None = None) -> None:
        start = time.perf_counter()
        try:
            response = await client.request(method, path, json=body)
            status = response.status_code
        except httpx.HTTPError:
            status = 0  # a transport error or time-out counts as an error
        log.append((time.perf_counter() - start, status, start))

    while time.monotonic() < until:
        text = rng.choice(SENTENCES) + ("" if rng.random() < 0.6 else f" {rng.randrange(10_000)}")
        await call("POST", "/api/trace", {"text": text})  # the first view
        for stage in rng.sample(STAGES, 2):  # two steps
            await asyncio.sleep(rng.uniform(0.2, 1.0))
            await call("POST", "/api/trace", {"text": text, "stages": [stage], "encoding": "base64",
                                              "dtype": "float16"})
        await asyncio.sleep(rng.uniform(0.2, 1.0))
        choice = rng.random()
        if choice < 0.4:
            layer, head = rng.randrange(shape[0]), rng.randrange(shape[1])
            await call("POST", "/api/attention", {"text": text, "layer": layer, "head": head})
        elif choice < 0.7:
            await call("POST", "/api/predict", {"text": text, "seed": 0, "max_new_tokens": 4})
        elif choice < 0.9:
            await call("POST", "/api/tokenize", {"text": text})
        else:
            await call("GET", "/api/models/tiny-gpt")
        await asyncio.sleep(rng.uniform(0.2, 1.0))


async def mixed(url: str, clients: int, seconds: float, server_pid: int | None) -> dict[str, object]:
    log: list[tuple[float, int, float]] = []  # latency, status, when it was sent
    rss: list[float] = [rss_mb(server_pid)] if server_pid else []
    until = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=30, limits=limits) as client:
        info = (await client.get("/api/models/tiny-gpt")).json()  # layers and heads of the model on the server
        shape = (int(info["n_layers"]), int(info["n_heads"]))
        async def sample_rss() -> None:
            while server_pid and time.monotonic() < until:
                await asyncio.sleep(10)
                rss.append(rss_mb(server_pid))

        started, sent_from = time.monotonic(), time.perf_counter()
        students = (one_client(client, until, random.Random(i), log, shape) for i in range(clients))
        await asyncio.gather(sample_rss(), *students)
        elapsed = time.monotonic() - started
    latencies = sorted(t for t, _, _ in log)
    errors = sum(1 for _, status, _ in log if status != 200)
    by_status = {str(code): sum(1 for _, status, _ in log if status == code) for code in {s for _, s, _ in log} - {200}}
    errors_at = sorted(round(sent - sent_from, 1) for _, status, sent in log if status != 200)
    return {"responses": len(log), "errors": errors, "p50": statistics.median(latencies) * 1e3,
            "p95": latencies[int(0.95 * (len(latencies) - 1))] * 1e3, "throughput": len(log) / elapsed, "rss": rss,
            "error_statuses": by_status, "errors_at_s": errors_at[:8]}


async def burst(url: str, count: int) -> dict[str, object]:
    limits = httpx.Limits(max_connections=count)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
        async def one(i: int) -> tuple[int, float, bool]:
            start = time.perf_counter()
            try:
                response = await client.post("/api/trace", json={"text": f"a burst of new sentences {i}",
                                                                 "stages": ["*"], "encoding": "base64"})
                return response.status_code, time.perf_counter() - start, "retry-after" in response.headers
            except httpx.HTTPError:
                return 0, time.perf_counter() - start, False

        results = await asyncio.gather(*(one(i) for i in range(count)))
    refused = [r for r in results if r[0] == 503]
    return {"answered": sum(1 for r in results if r[0] == 200), "refused": len(refused),
            "refused_with_retry_after": sum(1 for r in refused if r[2]),
            "other": sum(1 for r in results if r[0] not in (200, 503)),
            "slowest_answer_s": max((r[1] for r in results if r[0] == 200), default=0.0),
            "slowest_refusal_s": max((r[1] for r in refused), default=0.0)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--burst", type=int, default=200)
    parser.add_argument("--url", help="run against this running server instead of starting one (no RSS samples)")
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores; {args.clients} clients for {args.seconds:.0f} s; burst {args.burst}")
    runs: list[int | None] = [None] if args.url else args.processes  # None: the server at --url
    for processes in runs:
        if processes is None:
            mix = asyncio.run(mixed(args.url, args.clients, args.seconds, None))
            shot = asyncio.run(burst(args.url, args.burst))
        else:
            port = free_port()
            server = start_server(port, processes)
            url = f"http://127.0.0.1:{port}"
            try:
                mix = asyncio.run(mixed(url, args.clients, args.seconds, server.pid))
                shot = asyncio.run(burst(url, args.burst))
            finally:
                os.killpg(server.pid, signal.SIGTERM)
                server.wait(timeout=30)
        rss = ", ".join(f"{r:.0f}" for r in mix["rss"]) or "not sampled"  # type: ignore[attr-defined]
        print(f"\n== {args.url if processes is None else f'{processes} process(es)'}")
        errors = f"{mix['errors']} errors {mix['error_statuses'] or ''}"
        if mix["errors"]:
            errors += f" sent at {mix['errors_at_s']} s"
        print(f"mixed: {mix['responses']} responses, {errors} (goal 0), p50 {mix['p50']:.0f} ms, "
              f"p95 {mix['p95']:.0f} ms (goal <= 800), {mix['throughput']:.1f} responses/s")
        print(f"server RSS every 10 s (MB): {rss}")
        print(f"burst of {args.burst} full traces: {shot['answered']} answered, {shot['refused']} refused with 503 "
              f"({shot['refused_with_retry_after']} with Retry-After), {shot['other']} other (goal 0); slowest "
              f"answer {shot['slowest_answer_s']:.1f} s, slowest refusal {shot['slowest_refusal_s']:.2f} s")


if __name__ == "__main__":
    main()
