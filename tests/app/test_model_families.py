"""The explorer on a model with Llama 3.1's RoPE scaling and Qwen3's q/k norm: the positional view shows the scaled
angles and each pair's frequency before and after scaling, the model's stages name the norm, and the page's model
info carries both options."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
from fastapi.testclient import TestClient

from app.factory import create_app
from app.registry import Registry
from checkpoints import LoadedModel
from model import Transformer, TransformerConfig
from model.positional import llama3_freq_factors, rope_angles
from model.tokenizer import CharTokenizer
from tests.app.conftest import error_of, make_settings, post
from tests.lab.new_family_models import NEW_FAMILIES

FACTORS = llama3_freq_factors(8, 1000.0, 8.0, 1.0, 4.0, 32)  # d_head 8: four pairs


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    tok = CharTokenizer("abcdefghijklmnopqrstuvwxyz ")
    cfg = TransformerConfig(vocab_size=tok.vocab_size, d_model=32, n_heads=4, n_kv_heads=2, n_layers=1, n_ctx=64,
                            pos_encoding="rope", rope_base=1000.0, rope_freq_factors=FACTORS, qk_norm=True,
                            norm="rmsnorm", activation="swiglu", bias=False, seed=3, init_std=0.3)
    registry = Registry(default="scaled")
    registry.add("scaled", LoadedModel(Transformer(cfg).eval(), tok, {"description": "scaled RoPE, q/k norm"}),
                 source="test")
    with TestClient(create_app(make_settings(tmp_path_factory.mktemp("families")), registry)) as test_client:
        yield test_client


def test_the_positional_view_shows_the_scaled_frequencies(client: TestClient) -> None:
    out = client.get("/api/positional-encoding", params={"model": "scaled", "length": 40}).json()
    tensors = out["tensors"]
    factors = np.array(tensors["factors"]["data"])
    assert factors == pytest.approx(FACTORS, rel=1e-3) and factors[0] == 1.0 and factors[-1] == 8.0
    plain = rope_angles(40, 8, 1000.0).numpy()
    angles = np.array(tensors["angles"]["data"])
    assert angles == pytest.approx(plain / np.array(FACTORS), rel=1e-3, abs=1e-6)
    assert np.array(tensors["frequencies"]["data"]) == pytest.approx(plain[1] / np.array(FACTORS), rel=1e-3)
    # those are the angles the model's attention turns q and k by
    table = client.app.state.service.registry.get("scaled").model.stack.blocks[0].attn.angle_table  # type: ignore
    assert np.abs(table[:40].numpy() - angles).max() < 1e-3 * max(1.0, float(np.abs(angles).max()))
    # the kind alone (no model) has no factors: the formula's own angles
    alone = client.get("/api/positional-encoding", params={"kind": "rope", "length": 4, "d_model": 32,
                                                          "n_heads": 4, "base": 1000}).json()["tensors"]
    assert "factors" not in alone


def test_other_head_sizes_cannot_borrow_the_models_factors(client: TestClient) -> None:
    response = client.get("/api/positional-encoding", params={"model": "scaled", "length": 8, "n_heads": 2})
    status, _, message = error_of(response)
    assert status == 422 and "scaled pair by pair for its heads of 8 dimensions" in message


def test_the_q_and_k_norms_are_stages_of_the_model(client: TestClient) -> None:
    info = client.get("/api/models/scaled").json()
    assert info["config"]["qk_norm"] is True and len(info["config"]["rope_freq_factors"]) == 4
    names = [s if isinstance(s, str) else s["name"] for s in info["stages"]]
    assert names.index("blocks.0.attn.hook_q") < names.index("blocks.0.attn.hook_norm_q") < names.index(
        "blocks.0.attn.hook_rot_q")
    out = post(client, "/api/trace", {"model": "scaled", "text": "the cat",
                                      "stages": ["blocks.0.attn.hook_norm_k"], "encoding": "base64"})
    assert out.status_code == 200
    from app.tensors import decode_tensor

    normed = decode_tensor(out.json()["stages"]["blocks.0.attn.hook_norm_k"])  # [batch, pos, kv_head, d_head]
    model = client.app.state.service.registry.get("scaled").model  # type: ignore[attr-defined]
    weight = model.stack.blocks[0].attn.k_norm_w.detach().numpy()
    rms = np.sqrt(((normed / weight) ** 2).mean(-1))
    assert normed.shape[-2:] == (2, 8) and rms == pytest.approx(1.0, abs=1e-3)


def test_a_model_without_the_options_is_written_as_before() -> None:
    plain = TransformerConfig(pos_encoding="rope")
    assert {"rope_freq_factors", "qk_norm"}.isdisjoint(plain.to_dict())
    scaled = plain.replace(rope_freq_factors=[2.0] * 8, qk_norm=True)
    assert scaled.rope_freq_factors == (2.0,) * 8
    assert TransformerConfig.from_dict(scaled.to_dict()) == scaled
    with torch.inference_mode():
        assert Transformer(scaled)(torch.tensor([[1, 2, 3]])).isfinite().all()


def test_the_rope_view_turns_the_models_own_heads_and_shows_the_local_base(tmp_path: Path) -> None:
    """Heads of 16 dimensions on d_model 32 × 4 heads (Gemma's head_dim), layer 0 local with base 50, layer 1
    global with base 1000: the view turns 8 pairs, names both bases and shows the local layers' angles."""
    registry = Registry(default="gemma3")
    tok = CharTokenizer("abcdefghijklmnopqrstuvwxyz ")
    model = Transformer(TransformerConfig(vocab_size=tok.vocab_size, d_model=32, n_layers=2, n_heads=4, n_ctx=64,
                                          seed=5, **NEW_FAMILIES["gemma3"])).eval()
    registry.add("gemma3", LoadedModel(model, tok, {"description": "local and global layers"}), source="test")
    with TestClient(create_app(make_settings(tmp_path), registry)) as gemma:
        out = gemma.get("/api/positional-encoding", params={"model": "gemma3", "length": 12}).json()
        assert out["d_head"] == 16 and out["base"] == 1000.0 and out["local_base"] == 50.0
        tensors = out["tensors"]
        angles = np.array(tensors["angles"]["data"])  # [pos, pair]: 8 pairs of a 16-wide head, not 32 / 4
        assert angles == pytest.approx(rope_angles(12, 16, 1000.0).numpy(), rel=1e-3, abs=1e-6)
        local = np.array(tensors["local_angles"]["data"])
        assert local.shape == (12, 8) and local == pytest.approx(rope_angles(12, 16, 50.0).numpy(), rel=1e-3, abs=1e-6)
        # those are the angles each layer's attention turns q and k by
        blocks = gemma.app.state.service.registry.get("gemma3").model.stack.blocks  # type: ignore[attr-defined]
        assert np.abs(blocks[0].attn.angle_table[:12].numpy() - local).max() < 1e-3 * float(np.abs(local).max())
        # the global layers' angles too
        assert np.abs(blocks[1].attn.angle_table[:12].numpy() - angles).max() < 1e-3 * float(np.abs(angles).max())


def test_a_model_without_local_layers_has_no_local_base(client: TestClient) -> None:
    out = client.get("/api/positional-encoding", params={"model": "scaled", "length": 4}).json()
    assert "local_base" not in out and "local_angles" not in out["tensors"]
