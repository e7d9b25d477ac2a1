"""The fixed set of requests whose answers must not change by accident, and the recorder of their digests.

Every endpoint is asked at least once with small, cheap parameters (and a few refusals), on the
seeded tiny models of tests/app/conftest.py. The sha256 of each response's status and body bytes is
kept in tests/app/answers_fixture.json; tests/app/test_answers_unchanged.py compares against it.

A change that is meant to alter answers re-records the file (and says so in its commit):

    PYTHONPATH=. python -m tests.app.record_answers            # rewrite the fixture
    PYTHONPATH=. python -m tests.app.record_answers --dump DIR # also write every body to DIR, to diff

Timings are the one thing that cannot repeat: in /api/lab/complexity's answer the measured seconds
(and the fits made from them) is replaced by null before hashing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
from pathlib import Path
from typing import Any
from unittest.mock import patch

from fastapi.testclient import TestClient

from lab import norm_placement

FIXTURE = Path(__file__).with_name("answers_fixture.json")
TEXT = "the cat sat on"
GPT = {"model": "gpt", "text": TEXT}
BERT = {"model": "bert", "text": TEXT}
PAIR = {"model": "translator", "text": "hello", "target_text": "ab"}

# (method, path, body or query); the label is "METHOD path json"
REQUESTS: list[tuple[str, str, dict[str, Any]]] = [
    ("GET", "/api/health", {}),
    ("GET", "/api/models", {}),
    ("GET", "/api/models/gpt", {}),
    ("GET", "/api/models/translator", {}),
    ("GET", "/api/models/nope", {}),
    ("GET", "/api/positional-encoding", {"kind": "sinusoidal", "length": 8, "d_model": 16}),
    ("GET", "/api/positional-encoding", {"kind": "rope", "length": 6, "d_model": 16, "n_heads": 2}),
    ("GET", "/api/positional-encoding", {"kind": "alibi", "length": 5, "n_heads": 2, "causal": False}),
    ("GET", "/api/positional-encoding", {"model": "bert", "length": 6}),
    ("GET", "/api/positional-encoding/kinds", {}),
    ("POST", "/api/tokenize", GPT),
    ("POST", "/api/tokenize", {"model": "bert", "text": "我爱北京"}),
    ("POST", "/api/tokenize", PAIR),
    ("POST", "/api/trace", {**GPT, "stages": ["hook_logits", "blocks.0.attn.hook_pattern"]}),
    ("POST", "/api/trace", {**GPT, "stages": ["blocks.1.attn.hook_pattern"], "encoding": "base64"}),
    ("POST", "/api/trace", {**BERT, "stages": ["blocks.0.hook_resid_post"]}),
    ("POST", "/api/trace", {**PAIR, "stages": ["decoder.blocks.0.cross_attn.hook_pattern"]}),
    ("POST", "/api/trace", {**GPT, "stages": ["blocks.0.attn.hook_pattern"],
                            "interventions": {"ablate_heads": [[0, 1]]}}),
    ("POST", "/api/trace", {**GPT, "stages": ["hook_logits"], "interventions": {"shuffle": [0, 2, 1, *range(3, 15)]}}),
    ("POST", "/api/trace", {**GPT, "stages": ["no.such.stage"]}),
    ("POST", "/api/attention", {**GPT, "layer": 1, "head": 3}),
    ("POST", "/api/attention", {**PAIR, "layer": 0, "cross": True}),
    ("POST", "/api/attention", {**GPT, "layer": 1, "head": 0, "interventions": {"temperature": 0.1}}),
    ("POST", "/api/attention", {**GPT, "layer": 7}),
    ("POST", "/api/qkv", {**GPT, "layer": 1}),
    ("POST", "/api/qkv", {**BERT, "layer": 0, "head": 1, "encoding": "base64"}),
    ("POST", "/api/activations", {**GPT, "layer": 1}),
    ("POST", "/api/activations", {**PAIR, "stack": "decoder"}),
    ("POST", "/api/predict", {**GPT, "seed": 1, "max_new_tokens": 3}),
    ("POST", "/api/predict", {**GPT, "seed": 2, "top_k": 5, "temperature": 0.7, "max_new_tokens": 2}),
    ("POST", "/api/predict", {**PAIR, "seed": 1}),
    ("POST", "/api/predict", BERT),
    ("POST", "/api/lab/scaling", {"d_k": [4, 16], "samples": 64, "n_keys": 8, "rows": 4}),
    ("POST", "/api/lab/scaling", {**GPT, "d_k": [4, 16], "samples": 64, "n_keys": 8, "rows": 4, "layer": 1}),
    ("POST", "/api/lab/scaling", {"d_k": [4, 2048]}),
    ("POST", "/api/lab/masks", {**GPT, "window": 2, "layer": 1}),
    ("POST", "/api/lab/masks", {**PAIR, "encoding": "base64"}),
    ("POST", "/api/lab/masks", {**GPT, "shorter": 99}),
    ("POST", "/api/lab/positions", {"length": 8, "d_model": 16, "n_heads": 2}),
    ("POST", "/api/lab/positions", {"model": "bert", "length": 8}),
    ("POST", "/api/lab/positions", {"model": "gpt", "length": 12, "pair": 1}),
    ("POST", "/api/lab/positions", {"model": "bert", "length": 65}),
    ("POST", "/api/lab/parameters", {"model": "gpt"}),
    ("POST", "/api/lab/parameters", {"model": "translator"}),
    ("POST", "/api/lab/parameters", {"config": {"d_model": 64, "n_heads": 4, "n_layers": 1}}),
    ("POST", "/api/lab/sampling", {**GPT, "temperature": 0.8, "top_k": 5, "top_p": 0.9, "seed": 3, "draws": 30,
                                   "show": 8}),
    ("POST", "/api/lab/sampling", {**PAIR, "draws": 5, "show": 4}),
    ("POST", "/api/lab/sampling", BERT),
    ("POST", "/api/lab/complexity", {"lengths": [16, 32], "d_model": 16, "n_heads": 2, "block": 16}),
    ("POST", "/api/lab/complexity", {"d_model": 64, "n_heads": 3}),
    ("POST", "/api/lab/flash", {**GPT, "layer": 1, "head": 2, "block_q": 3, "block_k": 2}),
    ("POST", "/api/lab/flash", {**PAIR, "stack": "decoder", "cross": True, "block_q": 2, "block_k": 2,
                                "encoding": "base64"}),
    ("POST", "/api/lab/flash", {**GPT, "head": 4}),
    ("GET", "/api/lab/kv-cache", {"context": 128, "batch": 2, "dtype": "bfloat16"}),
    ("GET", "/api/lab/kv-cache", {"dtype": "int3"}),
    ("POST", "/api/lab/generate", {**GPT, "max_new_tokens": 4}),
    ("POST", "/api/lab/generate", {**PAIR, "max_new_tokens": 3}),
    ("POST", "/api/lab/generate", {**BERT}),
    ("POST", "/api/lab/norm-placement", {"n_layers": 2, "d_model": 16, "n_heads": 2, "steps": 2, "batch": 2,
                                         "seq_len": 8, "seed": 1}),
    ("POST", "/api/lab/norm-placement", {"d_model": 64, "n_heads": 3}),
    ("POST", "/api/lab/logit-lens", {**GPT, "k": 3}),
    ("POST", "/api/lab/logit-lens", {**PAIR, "k": 2}),
    ("POST", "/api/lab/logit-lens", BERT),
    ("POST", "/api/lab/ablation", GPT),
    ("POST", "/api/lab/ablation", {**PAIR, "position": 1}),
    ("POST", "/api/lab/ablation", {**GPT, "position": 99}),
    ("POST", "/api/lab/linear-attention", {**GPT, "layer": 1, "head": 1}),
    ("POST", "/api/lab/linear-attention", BERT),
    ("POST", "/api/lab/objectives", {**GPT, "seed": 2}),
    ("POST", "/api/lab/objectives", BERT),
    ("POST", "/api/lab/head-count", {**GPT, "layer": 1}),
    ("POST", "/api/lab/head-count", {**PAIR, "stack": "decoder", "cross": True}),
    ("POST", "/api/lab/attention-flow", {**GPT, "layer": 1, "head": 2}),
    ("POST", "/api/lab/attention-flow", {**BERT, "head": 99}),
]


def label(method: str, path: str, body: dict[str, Any]) -> str:
    return f"{method} {path} {json.dumps(body, ensure_ascii=False, sort_keys=True)}"


TIMINGS = {"naive_seconds", "tiled_seconds", "naive_fit", "tiled_fit"}


def without_timings(value: Any) -> Any:
    """Timings (and the fits made of them) replaced by null, everything else kept."""
    if isinstance(value, dict):
        return {k: None if k in TIMINGS else without_timings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def answer_bytes(client: TestClient, method: str, path: str, body: dict[str, Any]) -> bytes:
    """Status line and body bytes exactly as the server sent them (timings nulled)."""
    if method == "GET":
        response = client.get(path, params=body)
    else:
        response = client.post(path, content=json.dumps(body), headers={"content-type": "application/json"})
    content = response.content
    if path == "/api/lab/complexity" and response.status_code == 200:
        content = json.dumps(without_timings(response.json()), sort_keys=True).encode()
    return f"{response.status_code}\n".encode() + content


def digests(client: TestClient, dump: Path | None = None) -> dict[str, str]:
    out = {}
    for i, (method, path, body) in enumerate(REQUESTS):
        # /api/lab/norm-placement trains on ../shared/corpus where a checkout has it: the recorded answers use
        # its built-in paragraph, so that they do not depend on what lies beside the checkout
        with patch.object(norm_placement, "CORPUS", Path("/nonexistent-corpus")):
            raw = answer_bytes(client, method, path, body)
        out[label(method, path, body)] = hashlib.sha256(raw).hexdigest()
        if dump is not None:
            (dump / f"{i:02d}.txt").write_bytes(label(method, path, body).encode() + b"\n" + raw)
    return out


def main() -> None:
    from app.factory import create_app
    from tests.app.conftest import make_registry, make_settings

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dump", type=Path, help="also write each answer's bytes into this folder")
    parser.add_argument("--check", action="store_true", help="compare with the fixture instead of rewriting it")
    args = parser.parse_args()
    if args.dump:
        args.dump.mkdir(parents=True, exist_ok=True)
    app = create_app(make_settings(Path(tempfile.mkdtemp())), make_registry())
    with TestClient(app) as client:
        found = digests(client, args.dump)
    if args.check:
        recorded = json.loads(FIXTURE.read_text(encoding="utf-8"))
        changed = [k for k in recorded if found.get(k) != recorded[k]] + [k for k in found if k not in recorded]
        print("\n".join(changed) or "all answers unchanged")
        raise SystemExit(1 if changed else 0)
    FIXTURE.write_text(json.dumps(found, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"recorded {len(found)} answers in {FIXTURE}")


if __name__ == "__main__":
    main()
