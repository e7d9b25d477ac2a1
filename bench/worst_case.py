"""The worst a single client can ask for, with default settings: server CPU, response size, memory.

    python bench/worst_case.py

Sends, to a live server (shipped models + minilm, default settings) on loopback, the requests that
were unbounded before: from-scratch configs at the schema's limits with different seeds, every stage
of the largest allowed model at the longest allowed text, every stage of minilm, long texts in both
languages. For each it prints the status, the server's CPU seconds (from /proc, so all its threads
count) and the response bytes; then the server's RSS against its baseline and its cache budgets.
Goals printed beside them: no request over 2 s of server CPU or 20 MB of response; RSS within
baseline + the configured caches.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.settings import Settings  # noqa: E402
from bench.load import free_port, rss_mb  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
HUGE = {"architecture": "encoder-decoder", "d_model": 1024, "n_layers": 12, "n_decoder_layers": 12, "n_heads": 16,
        "d_mlp": 4096}
UNDER_BUDGET = {"architecture": "decoder", "d_model": 512, "n_layers": 7, "n_heads": 16, "d_mlp": 2048}  # 22 M
# as long as the 128-token limit allows: bytes for from-scratch models, BPE / WordPiece for the shipped ones
INLINE_TEXT = ("The animal didn't cross the street because it was too tired. " * 3)[:126]
LONG_EN = ("The animal didn't cross the street because it was too tired. " * 10)[:300]
LONG_ZH = ("我爱北京天安门广场。小明把书给了小红，因为她要复习。" * 20)[:100]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def main() -> None:
    port = free_port()
    command = [sys.executable, "-m", "transformer_explorer", "serve", "--port", str(port), "--log-level", "warning"]
    server = subprocess.Popen(command, cwd=ROOT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=url, timeout=120) as client:
            for _ in range(300):
                try:
                    if client.get("/api/health").json()["loaded"] == client.get("/api/health").json()["models"]:
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(0.5)
            time.sleep(5)  # the server's background warm-up (first meta-device model) finishes after the models
            baseline = rss_mb(server.pid)
            cases = [(f"schema-limit config, seed {seed}", {"config": {**HUGE, "seed": seed}, "text": INLINE_TEXT,
                                                            "stages": ["*"]}) for seed in range(5)]
            cases += [(f"~25 M config, every stage, seed {seed}", {"config": {**UNDER_BUDGET, "seed": seed},
                                                                   "text": INLINE_TEXT, "stages": ["*"]})
                      for seed in range(6)]
            cases += [("~25 M config, one layer's attention", {"config": UNDER_BUDGET, "text": INLINE_TEXT,
                                                               "stages": ["blocks.0.attn.*"], "encoding": "base64"})]
            cases += [(f"{model}, every stage, {label}", {"model": model, "text": text, "stages": ["*"]})
                      for model in ("minilm", "tiny-gpt", "tiny-translator")
                      for label, text in (("English", LONG_EN), ("Chinese", LONG_ZH))]
            worst_cpu = worst_bytes = 0.0
            print(f"{'request':44s} status   server CPU s   response bytes")
            for label, body in cases:
                before = cpu_seconds(server.pid)
                response = client.post("/api/trace", json=body)
                used = cpu_seconds(server.pid) - before
                worst_cpu, worst_bytes = max(worst_cpu, used), max(worst_bytes, len(response.content))
                code = response.json().get("error", {}).get("code", "") if response.status_code != 200 else ""
                print(f"{label:44s} {response.status_code} {code:20s} {used:6.2f} {len(response.content):12,d}")
            settings = Settings()
            budget = settings.trace_cache_mb + settings.trace_cache_mb // 8 + 2 * settings.inline_cache_mb
            after = rss_mb(server.pid)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    print(f"worst server CPU per request: {worst_cpu:.2f} s (goal <= 2)")
    print(f"largest response: {worst_bytes / 1e6:.2f} MB (goal <= 20)")
    print(f"RSS: baseline {baseline:.0f} MB, after {after:.0f} MB; cache budgets {budget} MB "
          f"(goal: after <= baseline + budgets: {after <= baseline + budget})")


if __name__ == "__main__":
    main()
