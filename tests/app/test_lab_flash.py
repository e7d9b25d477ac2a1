"""POST /api/lab/flash: tiled attention equals the model's hook_z, the running max only grows, errors name
the option."""

from __future__ import annotations

import inspect
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.tensors import decode_tensor
from lessons.lab_claims import flash_traffic_saves
from tests.app.conftest import error_of, post

TEXT = "the cat sat on"


@pytest.mark.parametrize(("model", "extra"), [("gpt", {"layer": 1}), ("bert", {"layer": 0}),
                                              ("translator", {"target_text": "ab", "stack": "decoder", "cross": True})])
@pytest.mark.parametrize(("block_q", "block_k"), [(1, 1), (3, 2), (64, 64)])
def test_flash_output_equals_the_models_hook_z(client: TestClient, model: str, extra: dict[str, object],
                                               block_q: int, block_k: int) -> None:
    base = {"model": model, "text": TEXT, **extra}
    for head in range(2):
        out = post(client, "/api/lab/flash", {**base, "head": head, "block_q": block_q, "block_k": block_k,
                                              "encoding": "base64"}).json()
        qkv = post(client, "/api/qkv", {**base, "head": head, "encoding": "base64"}).json()
        z = decode_tensor(qkv["tensors"]["z"])
        flash = decode_tensor(out["output"])
        assert np.abs(flash - z.reshape(flash.shape)).max() <= 1e-5 and out["max_diff_z"] <= 1e-5
        assert out["max_diff_naive"] <= 1e-5
        n_q, n_k = len(out["query_tokens"]), len(out["key_tokens"])
        assert out["n_squared_bytes"] == n_q * n_k * 4
        assert out["computed_tiles"] + out["skipped_tiles"] == out["q_tiles"] * out["k_tiles"] == len(out["tiles"]) + \
            out["skipped_tiles"]
        if block_q * block_k < n_q * n_k and block_q * out["d_head"] < n_q * n_k:
            assert out["largest_bytes"] < out["n_squared_bytes"]  # no state held the n × n matrix
        for tile in out["tiles"]:  # after a query tile's last key tile, acc / l is that tile's output
            last = max(t["k_block"] for t in out["tiles"] if t["q_block"] == tile["q_block"])
            if tile["k_block"] == last:
                q0, q1 = tile["q_range"]
                rows = np.array(tile["acc"]) / np.array(tile["l"])[:, None]
                assert np.abs(rows - flash[q0:q1]).max() < 1e-4
    causal = post(client, "/api/lab/flash", {"model": "gpt", "text": TEXT, "block_q": 2, "block_k": 2}).json()
    assert causal["causal"] and causal["skipped_tiles"] > 0  # tiles wholly in the future are never computed


def test_flash_running_max_only_grows_and_errors_name_the_option(client: TestClient) -> None:
    out = post(client, "/api/lab/flash", {"model": "gpt", "text": TEXT, "block_q": 4, "block_k": 2}).json()
    for q_block in range(out["q_tiles"]):
        states = [t["m"] for t in out["tiles"] if t["q_block"] == q_block]
        for before, after in zip(states, states[1:], strict=False):
            assert all(b is None or (a is not None and a >= b) for b, a in zip(before, after, strict=True))
    status, code, message = error_of(post(client, "/api/lab/flash", {"model": "gpt", "text": TEXT, "head": 4}))
    assert (status, code) == (422, "out_of_range") and "Head 4" in message
    status, code, message = error_of(post(client, "/api/lab/flash", {"model": "gpt", "text": TEXT, "block_q": 0}))
    assert (status, code) == (422, "invalid_request") and "block_q" in message
    status, code, _ = error_of(post(client, "/api/lab/flash", {"model": "gpt", "text": TEXT, "cross": True}))
    assert (status, code) == (422, "not_in_model")


def test_flash_counts_the_memory_traffic_of_its_loop_and_the_formulas(client: TestClient) -> None:
    body = {"model": "bert", "text": TEXT, "layer": 0, "head": 1, "block_q": 3, "block_k": 2}
    out = post(client, "/api/lab/flash", body).json()
    n, d = len(out["query_tokens"]), out["d_head"]  # an encoder: no mask, so no tile is skipped
    assert (out["loop_read_bytes"], out["loop_written_bytes"]) == (out["formula_read_bytes"],
                                                                   out["formula_written_bytes"])
    assert out["formula_read_bytes"] == 4 * (n * d + -(-n // 3) * 2 * n * d)
    assert out["standard_read_bytes"] + out["standard_written_bytes"] == 4 * (4 * n * d + 4 * n * n)
    half = post(client, "/api/lab/flash", {**body, "dtype": "float16"}).json()
    assert half["bytes_per_number"] == 2 and half["standard_bytes"] == [b // 2 for b in out["standard_bytes"]]
    assert half["loop_read_bytes"] * 2 == out["loop_read_bytes"]
    causal = post(client, "/api/lab/flash", {**body, "model": "gpt", "layer": 1}).json()
    assert causal["skipped_tiles"] > 0 and causal["loop_read_bytes"] < causal["formula_read_bytes"]
    assert len(out["traffic_lengths"]) == len(out["standard_bytes"]) == len(out["flash_bytes"])
    # the curves start at this sentence's N, where the formulas are this sentence's own numbers
    assert out["traffic_lengths"][0] == n and out["traffic_lengths"][-1] == 16384
    assert out["standard_bytes"][0] == out["standard_read_bytes"] + out["standard_written_bytes"]
    assert out["flash_bytes"][0] == out["formula_read_bytes"] + out["formula_written_bytes"]
    big = post(client, "/api/lab/flash", {**body, "block_q": 128, "traffic_block_q": 3}).json()
    assert big["flash_large_block_bytes"] == out["flash_bytes"]  # the second curve is the formula at its own block
    assert out["flash_large_block_bytes"][-1] < out["standard_bytes"][-1] < out["flash_bytes"][-1]
    status, code, message = error_of(post(client, "/api/lab/flash", {**body, "dtype": "int8"}))
    assert status == 422 and "dtype" in message


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run the page's modules")
def test_the_efficiency_chapter_opens_flash_at_its_claims_query_block() -> None:
    """Opened from the chapter, the panel draws the query block the chapter's claim measures (128), not the panel's
    default of 4 (where tiles of 4 move more memory than standard attention: the opposite first impression)."""
    claim_block = inspect.signature(flash_traffic_saves).parameters["block_q"].default
    lessons = Path(__file__).resolve().parents[2] / "static/js/lessons.js"
    script = (f"const m = await import({json.dumps(lessons.as_uri())});\n"
              "console.log(JSON.stringify(m.CHAPTER_LINKS.efficiency.find((l) => l.lab === 'flash').fields));")
    done = subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60,
                          check=True)
    assert json.loads(done.stdout)["flash.block_q"] == claim_block == 128
