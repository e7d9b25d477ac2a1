"""POST /api/lab/nope-attention on a tiny SmolLM3-shaped model (NoPE in layers 1 and 3): a NoPE layer's probe is flat
and a RoPE layer's is not, both agree with the trace at the key's real place; the layers are checked by name; and a
model without NoPE layers is refused by name, with the details a page words in its own language."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.factory import create_app
from app.registry import Registry
from checkpoints import LoadedModel
from model import Transformer, TransformerConfig
from model.tokenizer import CharTokenizer
from tests.app.conftest import error_of, make_settings, post

SMOLLM3: dict[str, Any] = {"pos_encoding": "rope", "norm": "rmsnorm", "activation": "swiglu", "bias": False,
                           "n_kv_heads": 2, "nope_layers": (1, 3)}
TEXT = "the cat sat on the mat"
ROUTE = "/api/lab/nope-attention"


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    tok = CharTokenizer("abcdefghijklmnopqrstuvwxyz ", specials=("<s>",))
    registry = Registry(default="smollm3")
    extras: tuple[tuple[str, dict[str, Any]], ...] = (("smollm3", SMOLLM3), ("plain", {**SMOLLM3, "nope_layers": None}))
    for name, extra in extras:
        cfg = TransformerConfig(vocab_size=tok.vocab_size, d_model=32, n_layers=4, n_heads=4, n_ctx=64, seed=5,
                                init_std=0.5, **extra)
        registry.add(name, LoadedModel(Transformer(cfg).eval(), tok, {"description": name, "bos_token": "<s>"}),
                     source="test")
    with TestClient(create_app(make_settings(tmp_path_factory.mktemp("nope")), registry)) as test_client:
        yield test_client


def test_the_nope_layer_beside_the_rope_layer_below_it(client: TestClient) -> None:
    response = post(client, ROUTE, {"model": "smollm3", "text": TEXT, "head": 2})
    assert response.status_code == 200, response.text
    out = response.json()
    n = len(out["tokens"])
    assert (out["nope_layers"], out["rope_layers"], out["last_query"]) == ([1, 3], [0, 2], n - 1)
    nope, rope = out["nope"], out["rope"]
    assert (nope["layer"], nope["positions"], rope["layer"], rope["positions"]) == (1, False, 0, True)
    assert nope["moved_spread"] <= 1e-6 * max(map(abs, nope["moved"]))
    assert rope["moved_spread"] > 1e-2 * max(map(abs, rope["moved"]))
    assert nope["unturned_diff"] <= 1e-5 * nope["score_scale"] < rope["unturned_diff"]
    for side in (nope, rope):
        assert side["real_distance"] == n - 1 - out["key"] and side["real_diff"] <= 1e-5
        assert len(side["moved"]) == n and len(side["weights"]) == n
        assert side["weights"][0][1] is None and abs(sum(side["weights"][-1]) - 1) < 1e-4  # causal rows sum to 1
    chosen = post(client, ROUTE, {"model": "smollm3", "text": TEXT, "nope_layer": 3, "rope_layer": 2, "key": 1})
    assert (chosen.json()["nope"]["layer"], chosen.json()["rope"]["layer"], chosen.json()["key"]) == (3, 2, 1)


def test_a_model_without_nope_layers_is_refused_by_name(client: TestClient) -> None:
    response = post(client, ROUTE, {"model": "plain", "text": TEXT})
    status, code, message = error_of(response)
    assert (status, code) == (422, "not_in_model") and "plain has no layer without positions (NoPE)" in message
    assert response.json()["error"]["details"] == {"reason": "no_nope_layers", "model": "plain"}


@pytest.mark.parametrize(("body", "reason"), [({"nope_layer": 2}, "not_nope_layer"),
                                              ({"rope_layer": 3}, "not_rope_layer")])
def test_a_layer_of_the_wrong_kind_is_refused_naming_the_right_ones(client: TestClient, body: dict[str, int],
                                                                    reason: str) -> None:
    response = post(client, ROUTE, {"model": "smollm3", "text": TEXT, **body})
    status, code, message = error_of(response)
    assert (status, code) == (422, "invalid_option")
    assert response.json()["error"]["details"]["reason"] == reason
    # the layers as numbers, for the page to list in its language ("1, 3" / "1、3")
    assert response.json()["error"]["details"]["layers"] == ([1, 3] if reason == "not_nope_layer" else [0, 2])
    assert ("NoPE layers: 1, 3" if reason == "not_nope_layer" else "RoPE layers: 0, 2") in message
    _, code, message = error_of(post(client, ROUTE, {"model": "smollm3", "text": TEXT, "key": 99}))
    assert code == "out_of_range" and "Position 99" in message
