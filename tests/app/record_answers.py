"""The fixed set of requests whose answers must not change by accident: the recorder, and the comparison.

Every endpoint is asked at least once with small, cheap parameters (and a few refusals), on the
seeded tiny models of tests/app/conftest.py. tests/app/answers_fixture.json keeps each answer's status,
its body, and the sha256 of its bytes; tests/app/test_answers_unchanged.py compares against it.

How answers are compared, so that the test holds on any CPU (torch picks other kernels on another CPU,
AVX-512 or none, and sums in another order move the last bits of a float):
- an answer that holds no float is compared byte for byte (its sha256);
- an answer that holds floats is compared by structure: the same keys, list lengths, strings, integers
  and nulls, and every float within `TOLERANCE` (see `close`). Base64 tensors are decoded and compared
  the same way; numbers written inside strings ("entropy 0.91 nats") are compared as numbers.

A change that is meant to alter answers re-records the file (and says so in its commit):

    PYTHONPATH=. python -m tests.app.record_answers            # rewrite the fixture
    PYTHONPATH=. python -m tests.app.record_answers --check    # compare, print each difference
    PYTHONPATH=. python -m tests.app.record_answers --check --bytes  # also list answers whose bytes moved
    PYTHONPATH=. python -m tests.app.record_answers --dump DIR # also write every body to DIR, to diff

Timings are the one thing that cannot repeat: in /api/lab/complexity's answer the measured seconds
(and the fits made from them) is replaced by null before recording.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import math
import re
import tempfile
from pathlib import Path
from typing import Any
from unittest.mock import patch

import numpy as np
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
    ("GET", "/api/lab/kv-cache-size", {"context": 128, "batch": 2, "dtype": "bfloat16"}),
    ("GET", "/api/lab/kv-cache-size", {"dtype": "int3"}),
    ("GET", "/api/lab/kv-cache", {"context": 128, "batch": 2, "dtype": "bfloat16"}),  # the old route, deprecated
    ("POST", "/api/lab/cached-decoding", {**GPT, "max_new_tokens": 4}),
    ("POST", "/api/lab/cached-decoding", {**PAIR, "max_new_tokens": 3}),
    ("POST", "/api/lab/cached-decoding", {**BERT}),
    ("POST", "/api/lab/generate", {**GPT, "max_new_tokens": 4}),  # the old route, deprecated
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


def answers(client: TestClient, dump: Path | None = None) -> dict[str, dict[str, Any]]:
    """label -> {"status", "sha256" (of the status line and body bytes), "floats" (whether it holds any), "body"}."""
    out = {}
    for i, (method, path, body) in enumerate(REQUESTS):
        # /api/lab/norm-placement trains on ../shared/corpus where a checkout has it: the recorded answers use
        # its built-in paragraph, so that they do not depend on what lies beside the checkout
        with patch.object(norm_placement, "CORPUS", Path("/nonexistent-corpus")):
            raw = answer_bytes(client, method, path, body)
        status, content = raw.split(b"\n", 1)
        parsed = json.loads(content)
        out[label(method, path, body)] = {"status": int(status), "sha256": hashlib.sha256(raw).hexdigest(),
                                          "floats": holds_floats(parsed), "body": parsed}
        if dump is not None:
            (dump / f"{i:02d}.txt").write_bytes(label(method, path, body).encode() + b"\n" + raw)
    return out


# --- the comparison ------------------------------------------------------------------------------------------

# A float may move by one unit in its 4th significant digit (tensors are written with 4 significant digits,
# lab figures with 4 or 6 decimals, so a last-bit change can flip the rounding), by RELATIVE of the largest
# magnitude in the same array (float32 sums in another order; an entry near zero made by cancellation moves
# by about the size of its terms), and by ABSOLUTE (identity residuals such as 3.6e-7 are rounding noise).
RELATIVE = 1e-5
ABSOLUTE = 1e-6
TOLERANCE = (f"|a - b| <= {ABSOLUTE:g} + {RELATIVE:g} * (largest |x| of the array) "
             "+ one unit in the 4th significant digit of max(|a|, |b|)")
NUMBER = re.compile(r"-?\d+\.\d+(?:[eE][-+]?\d+)?|-?\d+(?:[eE][-+]?\d+)")  # decimals in a string; not integers


def holds_floats(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return "bdata" in value or any(holds_floats(v) for v in value.values())
    if isinstance(value, list):
        return any(holds_floats(v) for v in value)
    return isinstance(value, str) and NUMBER.search(value) is not None


def close(a: float, b: float, scale: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    largest = max(abs(a), abs(b))
    digit = 10.0 ** (math.floor(math.log10(largest)) - 3) if largest > 0 else 0.0
    return abs(a - b) <= ABSOLUTE + RELATIVE * scale + 1.0001 * digit


def _numeric(value: Any) -> bool:
    """A list of numbers and nulls at any depth: a tensor written as nested lists."""
    if isinstance(value, list):
        return all(_numeric(v) for v in value)
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def _flat(value: Any) -> list[Any]:
    return [x for v in value for x in _flat(v)] if isinstance(value, list) else [value]


def _decoded(spec: dict[str, Any]) -> list[float]:
    kinds = {"f4": "<f4", "f2": "<f2", "i4": "<i4"}
    return np.frombuffer(base64.b64decode(spec["bdata"]), dtype=kinds[spec["dtype"]]).astype(np.float64).tolist()


def _scale(values: list[Any]) -> float:
    finite = [abs(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    return max(finite, default=0.0)


def _same_numbers(rec: list[Any], got: list[Any], where: str, out: list[str]) -> None:
    if len(rec) != len(got):
        out.append(f"{where}: {len(got)} values, recorded {len(rec)}")
        return
    scale = _scale(rec)
    for i, (a, b) in enumerate(zip(rec, got, strict=True)):
        if a is None or b is None or isinstance(a, int) and isinstance(b, int):
            if a != b:
                out.append(f"{where}[{i}]: {b!r}, recorded {a!r}")
                return
        elif not close(float(a), float(b), scale):
            out.append(f"{where}[{i}]: {b!r}, recorded {a!r} (tolerance: {TOLERANCE})")
            return


def differences(rec: Any, got: Any, where: str = "") -> list[str]:
    """Where `got` differs from the recorded `rec` beyond the tolerance (an empty list: the same answer)."""
    out: list[str] = []
    if isinstance(rec, dict) and isinstance(got, dict):
        if set(rec) != set(got):
            out.append(f"{where}: keys {sorted(got)}, recorded {sorted(rec)}")
        elif "bdata" in rec and rec.get("dtype") != "i4":
            if rec["dtype"] != got["dtype"] or rec.get("shape") != got.get("shape"):
                out.append(f"{where}: {got['dtype']} {got.get('shape')}, recorded {rec['dtype']} {rec.get('shape')}")
            else:
                _same_numbers(_decoded(rec), _decoded(got), where, out)
        else:
            for key in rec:
                out += differences(rec[key], got[key], f"{where}.{key}")
    elif isinstance(rec, list) and isinstance(got, list) and _numeric(rec) and _numeric(got):
        if np.shape(rec) != np.shape(got) if rec and got else len(rec) != len(got):
            out.append(f"{where}: shape {np.shape(got)}, recorded {np.shape(rec)}")
        else:
            _same_numbers(_flat(rec), _flat(got), where, out)
    elif isinstance(rec, list) and isinstance(got, list):
        if len(rec) != len(got):
            out.append(f"{where}: {len(got)} items, recorded {len(rec)}")
        else:
            for i, (a, b) in enumerate(zip(rec, got, strict=True)):
                out += differences(a, b, f"{where}[{i}]")
    elif isinstance(rec, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        if not close(rec, float(got), abs(rec)):
            out.append(f"{where}: {got!r}, recorded {rec!r} (tolerance: {TOLERANCE})")
    elif isinstance(rec, str) and isinstance(got, str) and rec != got:
        # numbers written in a sentence are compared as numbers, the words around them exactly
        if NUMBER.split(rec) != NUMBER.split(got):
            out.append(f"{where}: {got!r}, recorded {rec!r}")
        else:
            _same_numbers([float(x) for x in NUMBER.findall(rec)], [float(x) for x in NUMBER.findall(got)], where,
                          out)
    elif type(rec) is not type(got) or rec != got:
        out.append(f"{where}: {got!r}, recorded {rec!r}")
    return out


def changed_answers(recorded: dict[str, Any], found: dict[str, Any]) -> dict[str, list[str]]:
    """label -> what differs, for every answer that is not the recorded one (missing or new ones included)."""
    changed: dict[str, list[str]] = {}
    for name in recorded.keys() | found.keys():
        if name not in found or name not in recorded:
            changed[name] = ["not asked" if name not in found else "not recorded"]
            continue
        rec, got = recorded[name], found[name]
        if rec["status"] != got["status"]:
            changed[name] = [f"status {got['status']}, recorded {rec['status']}"]
        elif not rec["floats"]:
            if rec["sha256"] != got["sha256"]:
                changed[name] = ["bytes differ (no floats: compared exactly)", *differences(rec["body"], got["body"])]
        elif diff := differences(rec["body"], got["body"]):
            changed[name] = diff
    return changed


def write_fixture(found: dict[str, Any]) -> None:
    """One answer a line, so that a re-recording's diff shows which answers moved."""
    lines = [f"{json.dumps(name, ensure_ascii=False)}: {json.dumps(found[name], ensure_ascii=False)}"
             for name in (label(*r) for r in REQUESTS)]
    FIXTURE.write_text("{\n" + ",\n".join(lines) + "\n}\n", encoding="utf-8")


def main() -> None:
    from app.factory import create_app
    from tests.app.conftest import make_registry, make_settings

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dump", type=Path, help="also write each answer's bytes into this folder")
    parser.add_argument("--check", action="store_true", help="compare with the fixture instead of rewriting it")
    parser.add_argument("--bytes", action="store_true", help="with --check: also list the answers whose bytes moved")
    args = parser.parse_args()
    if args.dump:
        args.dump.mkdir(parents=True, exist_ok=True)
    app = create_app(make_settings(Path(tempfile.mkdtemp())), make_registry())
    with TestClient(app) as client:
        found = answers(client, args.dump)
    if args.check:
        recorded = json.loads(FIXTURE.read_text(encoding="utf-8"))
        changed = changed_answers(recorded, found)
        for name, diff in changed.items():
            print(name, *(f"    {line}" for line in diff[:5]), sep="\n")
        moved = [n for n in recorded if n in found and recorded[n]["sha256"] != found[n]["sha256"]]
        if args.bytes:
            print(f"bytes moved in {len(moved)} of {len(recorded)} answers (within the tolerance unless listed above):")
            print("\n".join(f"    {n}" for n in moved))
        print(f"{len(changed)} answers changed" if changed else "all answers unchanged")
        raise SystemExit(1 if changed else 0)
    write_fixture(found)
    print(f"recorded {len(found)} answers in {FIXTURE}")


if __name__ == "__main__":
    main()
