"""POST /api/tokenize and /api/trace: tokens with spans, stage selection, encodings, any Unicode."""

from __future__ import annotations

import json

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.tensors import decode_tensor
from tests.app.conftest import post

HOSTILE = ["我爱北京天安门广场。", "emoji 👩‍💻🚀", "שלום עולם", "a\x00b\x07c\u202e", "lone \ud800 surrogate", "\ud83d"]


def test_tokenize_gives_ids_pieces_and_spans(client: TestClient) -> None:
    body = post(client, "/api/tokenize", {"model": "gpt", "text": "hi 我"}).json()
    tokens = body["tokens"]
    assert tokens[0] == {"id": 256, "text": "<|endoftext|>", "start": 0, "end": 0}  # the model's start token
    assert [t["text"] for t in tokens[1:4]] == ["h", "i", " "]
    assert all(t["start"] == 3 and t["end"] == 4 for t in tokens[4:])  # 我 is 3 bytes, one span
    assert len(tokens) == 1 + 3 + 3


def test_tokenize_encoder_decoder_has_target_tokens(client: TestClient) -> None:
    body = post(client, "/api/tokenize", {"model": "translator", "text": "hi", "target_text": "yo"}).json()
    assert [t["text"] for t in body["tokens"]] == ["h", "i"]
    assert [t["text"] for t in body["target_tokens"]] == ["<s>", "y", "o"]
    only_start = post(client, "/api/tokenize", {"model": "translator", "text": "hi"}).json()
    assert [t["text"] for t in only_start["target_tokens"]] == ["<s>"]


@pytest.mark.parametrize("model", ["gpt", "bert", "translator"])
@pytest.mark.parametrize("text", HOSTILE)
def test_any_unicode_is_valid_input(client: TestClient, model: str, text: str) -> None:
    response = post(client, "/api/trace", {"model": model, "text": text, "stages": ["*hook_tokens"]})
    assert response.status_code == 200, response.text
    body = json.loads(response.content)
    assert body["tokens"] and all(0 <= t["start"] <= t["end"] <= len(text) for t in body["tokens"])


def test_default_first_view_is_small(client: TestClient) -> None:
    text = "The quick brown fox jumps over it"[:31]
    response = post(client, "/api/trace", {"model": "gpt", "text": text})
    body = response.json()
    assert set(body["stages"]) == {"hook_tokens", "hook_embed"}  # RoPE: no position table
    assert len(response.content) <= 64 * 1024
    assert len(body["top_tokens"]) == 10
    assert body["stages"]["hook_embed"]["shape"] == [32, 32]  # 31 characters + BOS, d_model 32


def test_stage_patterns_layers_and_heads(client: TestClient) -> None:
    body = post(client, "/api/trace", {"model": "gpt", "text": "abc", "stages": ["blocks.*.attn.hook_pattern",
                                       "blocks.*.attn.hook_k"], "layers": [1], "heads": [1, 3], "top_k": 0}).json()
    assert set(body["stages"]) == {"blocks.1.attn.hook_pattern", "blocks.1.attn.hook_k"}
    assert body["stages"]["blocks.1.attn.hook_pattern"]["shape"] == [2, 4, 4]  # heads 1 and 3, 4 tokens with BOS
    # heads 1 and 3 read K/V heads 0 and 1 (GQA, 2 query heads per K/V head)
    assert body["stages"]["blocks.1.attn.hook_k"]["shape"] == [4, 2, 8]
    assert "top_tokens" not in body


def test_full_trace_sums_add_up(client: TestClient) -> None:
    """resid_post = resid_mid + mlp_out, through the API (Pre-LN decoder)."""
    stages = post(client, "/api/trace", {"model": "gpt", "text": "sum me", "stages": ["blocks.0.hook_*"]}).json()
    mid, mlp, post_ = (decode_tensor(stages["stages"][f"blocks.0.hook_{n}"])
                       for n in ("resid_mid", "mlp_out", "resid_post"))
    np.testing.assert_allclose(mid + mlp, post_, rtol=2e-3, atol=2e-4)


def test_base64_and_list_decode_to_the_same_numbers(client: TestClient) -> None:
    request = {"model": "gpt", "text": "same numbers", "stages": ["blocks.0.attn.hook_attn_scores", "hook_embed",
                                                                  "hook_tokens"]}
    as_list = post(client, "/api/trace", request).json()["stages"]
    as_f4 = post(client, "/api/trace", {**request, "encoding": "base64"}).json()["stages"]
    as_f2 = post(client, "/api/trace", {**request, "encoding": "base64", "dtype": "float16"}).json()["stages"]
    for name in request["stages"]:
        a, b, c = decode_tensor(as_list[name]), decode_tensor(as_f4[name]), decode_tensor(as_f2[name])
        assert a.shape == b.shape == c.shape == tuple(as_list[name]["shape"])
        np.testing.assert_allclose(a, b, rtol=5e-4, atol=1e-12, equal_nan=True)  # lists keep 4 significant digits
        np.testing.assert_allclose(b, c, rtol=1e-3, atol=1e-4, equal_nan=True)
    assert as_f4["hook_embed"]["data"]["dtype"] == "f4" and as_f2["hook_embed"]["data"]["dtype"] == "f2"
    assert as_f4["hook_tokens"]["data"]["dtype"] == "i4"
    assert as_f4["hook_embed"]["data"]["shape"] == "13, 32"  # Plotly's "rows, cols"


def test_masked_cells_are_null_in_lists_and_nan_in_base64(client: TestClient) -> None:
    request = {"model": "gpt", "text": "abc", "stages": ["blocks.0.attn.hook_attn_scores"]}
    rows = post(client, "/api/trace", request).json()["stages"]["blocks.0.attn.hook_attn_scores"]["data"][0]
    for q, row in enumerate(rows):
        assert all((cell is None) == (k > q) for k, cell in enumerate(row))  # causal: later keys are hidden
    b64 = post(client, "/api/trace", {**request, "encoding": "base64"}).json()["stages"]
    decoded = decode_tensor(b64["blocks.0.attn.hook_attn_scores"])[0]
    assert np.isnan(decoded[np.triu_indices(4, 1)]).all() and not np.isnan(decoded[np.tril_indices(4)]).any()


def test_inline_config_model(client: TestClient) -> None:
    body = post(client, "/api/trace", {"config": {"n_heads": 1, "d_model": 16, "n_layers": 1, "pos_encoding": "alibi",
                                                   "seed": 7}, "text": "one head", "stages": ["*hook_pattern"]}).json()
    assert body["model"] == "inline"
    assert body["stages"]["blocks.0.attn.hook_pattern"]["shape"] == [1, 8, 8]
    again = post(client, "/api/trace", {"config": {"n_heads": 1, "d_model": 16, "n_layers": 1,
                                                    "pos_encoding": "alibi", "seed": 7}, "text": "one head",
                                        "stages": ["*hook_pattern"]}).json()
    assert again["stages"] == body["stages"]  # seeded: the same config gives the same model


def test_encoder_decoder_first_view_has_cross_attention(client: TestClient) -> None:
    body = post(client, "/api/trace", {"model": "translator", "text": "abc", "target_text": "x"}).json()
    assert [t["text"] for t in body["target_tokens"]] == ["<s>", "x"]
    cross = body["stages"]["decoder.blocks.0.cross_attn.hook_pattern"]
    assert cross["shape"] == [4, 2, 3]  # head, decoder positions, source positions
    assert "encoder.hook_pos_embed" in body["stages"]
