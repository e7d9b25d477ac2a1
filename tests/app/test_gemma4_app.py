"""The explorer and the lab on a tiny model with Gemma 4's fields (tests/lab/test_gemma4_lab.py's): its stages are
described and traced, the positional view turns its global heads (16 wide) and its local ones (8) by each layer's
own angles, the KV-cache panel counts only the layers that store K and V, and the experiments that redo its math
outside the forward pass answer a 422 naming what they leave out."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.factory import create_app
from app.registry import Registry
from checkpoints import LoadedModel
from model import Transformer, TransformerConfig
from model.tokenizer import CharTokenizer
from tests.app.conftest import error_of, make_settings, post
from tests.lab.test_gemma4_lab import GEMMA4

TEXT = "the cat sat on the mat"


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    tok = CharTokenizer("abcdefghijklmnopqrstuvwxyz ")
    cfg = TransformerConfig(**{**GEMMA4, "vocab_size": tok.vocab_size})
    registry = Registry(default="gemma4")
    registry.add("gemma4", LoadedModel(Transformer(cfg).eval(), tok, {"description": "Gemma 4's fields"}),
                 source="test")
    with TestClient(create_app(make_settings(tmp_path_factory.mktemp("gemma4")), registry)) as test_client:
        yield test_client


def test_the_new_stages_are_described_and_traced(client: TestClient) -> None:
    info = client.get("/api/models/gemma4").json()
    steps = {s["name"]: s["step"] for s in info["stages"]}
    assert steps["blocks.4.attn.hook_k_shared"] == "kv_shared" and steps["blocks.0.hook_pli_out"] == "pli"
    assert steps["blocks.5.hook_resid_unscaled"] == "layer_scalar" and "blocks.4.attn.hook_k" not in steps
    dims = {s["name"]: s["dims"] for s in info["stages"]}
    assert dims["hook_pli"] == ["pos", "layer", "d_pli"]
    stages = ["blocks.4.attn.hook_k_shared", "blocks.1.attn.hook_norm_v", "blocks.3.hook_pli_out"]
    out = post(client, "/api/trace", {"model": "gemma4", "text": TEXT, "stages": stages})
    assert out.status_code == 200 and set(out.json()["stages"]) >= set(stages)


def test_the_positional_view_turns_global_and_local_heads_as_the_model_does(client: TestClient) -> None:
    out = client.get("/api/positional-encoding", params={"model": "gemma4", "length": 12}).json()
    assert out["d_head"] == 16 and out["base"] == 1000.0 and out["local_base"] == 50.0
    blocks = client.app.state.service.registry.get("gemma4").model.stack.blocks  # type: ignore[attr-defined]
    angles, local = (np.array(out["tensors"][name]["data"]) for name in ("angles", "local_angles"))
    assert angles.shape == (12, 8) and local.shape == (12, 4)
    assert np.abs(blocks[1].attn.angle_table[:12].numpy() - angles).max() < 1e-3 * float(np.abs(angles).max())
    assert np.abs(blocks[0].attn.angle_table[:12].numpy() - local).max() < 1e-3 * float(np.abs(local).max())


def test_the_kv_cache_panel_counts_the_layers_that_store(client: TestClient) -> None:
    out = client.get("/api/lab/kv-cache-size", params={"context": 12, "dtype": "float32"}).json()
    own = next(m for m in out["models"] if m["model"] == "gemma4")
    row = next(r for r in own["variants"] if r["attention"] == own["own"])
    assert row["layers"] == 4 and "2 of 6 layers reuse" in row["note"]
    assert row["total_bytes"] == 4 * (2 * 2 * 8 * 3 + 2 * 1 * 16 * 12) * 2


@pytest.mark.parametrize(("path", "body"), [
    ("/api/lab/flash", {"layer": 1, "head": 0}),
    ("/api/lab/logit-attribution", {}),
    ("/api/lab/activation-patching", {"corrupted": "the dog sat on the mat"}),
])
def test_what_redoes_the_math_outside_the_pass_is_refused_by_name(client: TestClient, path: str,
                                                                  body: dict[str, object]) -> None:
    status, code, message = error_of(post(client, path, {"model": "gemma4", "text": TEXT, **body}))
    assert (status, code) == (422, "not_in_model") and "per-layer input" in message, message


def test_the_parameters_panel_counts_the_per_layer_inputs(client: TestClient) -> None:
    out = post(client, "/api/lab/parameters", {"model": "gemma4"})
    assert out.status_code == 200, out.text
    counts = out.json()["counts"] if "counts" in out.json() else out.json()["report"]["counts"]
    assert counts["per_layer_inputs"] > 0
