"""Every hook point of every model has exactly one description (app/stage_descriptions.py), with its own dims and
place; no description without a hook. Shipped models, the packaged ones when installed, and one tiny random model
of each family (built by the checkpoint tests' builders, loaded as a downloaded directory would be)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.stage_descriptions import ROWS, STEP_KINDS, Undescribed, describe
from checkpoints import load_checkpoint
from model.config import TransformerConfig
from model.hooks import stage_name
from model.transformer import Transformer
from tests.app.conftest import error_of, post

WEIGHTS = Path(__file__).resolve().parents[2] / "model" / "weights"
SHIPPED = sorted(d.name for d in WEIGHTS.iterdir() if (d / "config.json").exists())


def check(model: Transformer) -> list[dict[str, Any]]:
    """The invariant: one row per hook point, same name, order and dims; one main per step and layer."""
    described = describe(model)
    assert [row["name"] for row in described] == list(model.trace_names) == sorted(
        model.hook_points, key=model.trace_names.index)
    for row in described:
        assert row["dims"] == [d for d in model.hook_points[row["name"]].dims if d != "batch"]
        cross = row["site"] == "cross_attn"
        norm = row["site"] not in (None, "attn", "cross_attn", "deltanet", "mlp")
        stage = f"{row['site']}.{row['hook']}" if norm else row["hook"]
        assert stage_name(stage, row["layer"], stack=row["stack"], cross=cross) == row["name"]  # its place is true
        assert row["kind"] == STEP_KINDS.get(row["step"])
    mains = Counter((r["stack"], r["layer"], r["step"]) for r in described if r["main"])
    steps = {(r["stack"], r["layer"], r["step"]) for r in described if r["step"]}
    assert set(mains) == steps and set(mains.values()) == {1}
    return described


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_model_is_described(name: str) -> None:
    check(load_checkpoint(WEIGHTS / name).model)


@pytest.mark.parametrize("name", ["minilm", "smollm2"])
def test_the_packaged_models_are_described_when_installed(name: str) -> None:
    from checkpoints import pretrained

    try:
        loaded = getattr(pretrained, name)()
    except Exception as error:  # noqa: BLE001 — not installed here: nothing to describe
        pytest.skip(f"{name} is not installed: {error}")
    check(loaded.model)


def _hf(builder: Callable[[], Any]) -> Callable[[Path], Transformer]:
    def build(directory: Path) -> Transformer:
        from tests.checkpoints.test_families import save_hf_directory

        save_hf_directory(builder(), directory)
        return load_checkpoint(directory).model
    return build


def _families() -> dict[str, Callable[[Path], Transformer]]:
    from tests.checkpoints.gguf_files import tiny_gpt2, tiny_hf
    from tests.checkpoints.test_gemma import tiny_gemma
    from tests.checkpoints.test_gemma4_moe import tiny_gemma4_moe
    from tests.checkpoints.test_hf_parity import _ours, tiny_bert
    from tests.checkpoints.test_phi_family import tiny_phi3
    from tests.checkpoints.test_qwen3_moe import tiny_moe
    from tests.checkpoints.test_qwen35 import tiny_qwen35
    from tests.checkpoints.test_qwen35_moe import tiny_qwen35_moe
    from tests.checkpoints.test_smollm3 import tiny_smollm3

    return {
        "llama": _hf(lambda: tiny_hf("llama")), "qwen2": _hf(lambda: tiny_hf("qwen2")),
        "qwen3": _hf(lambda: tiny_hf("qwen3")), "gemma2": _hf(lambda: tiny_gemma("gemma2")),
        "gemma3": _hf(lambda: tiny_gemma("gemma3")), "phi3": _hf(lambda: tiny_phi3(0.75)),
        "qwen35": _hf(tiny_qwen35), "gpt2": _hf(tiny_gpt2), "bert": lambda _: _ours(tiny_bert()),
        "smollm3": _hf(tiny_smollm3), "qwen3_moe": _hf(lambda: tiny_moe(mlp_only_layers=[1])),
        "qwen35_moe": _hf(tiny_qwen35_moe), "gemma4_moe": _hf(tiny_gemma4_moe),
        # an encoder-decoder with every option its stacks can take: Post-LN, RoPE and q/k norm in both attentions
        "encoder-decoder": lambda _: Transformer(TransformerConfig(
            architecture="encoder-decoder", vocab_size=50, d_model=16, n_layers=2, n_decoder_layers=1, n_heads=2,
            pos_encoding="rope", norm_placement="post", qk_norm=True)),
    }


FAMILIES = ["llama", "qwen2", "qwen3", "gemma2", "gemma3", "phi3", "qwen35", "gpt2", "bert", "encoder-decoder",
            "smollm3", "qwen3_moe", "qwen35_moe", "gemma4_moe"]


@pytest.mark.parametrize("family", FAMILIES)
def test_one_model_of_each_family_is_described(family: str, tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    described = check(_families()[family](tmp_path))
    hooks = {(row["site"], row["hook"]) for row in described}
    expected = {"qwen3": ("attn", "norm_q"), "gemma2": (None, "logits_raw"), "gemma3": ("ln2_post", "normalized"),
                "bert": (None, "token_type_embed"), "qwen35": ("deltanet", "state"),
                "encoder-decoder": ("cross_attn", "norm_q"), "qwen3_moe": ("mlp", "expert_weights"),
                "qwen35_moe": ("mlp", "shared_gate"), "gemma4_moe": ("mlp", "router_probs")}
    if family in expected:  # the family's own stages are there, described
        assert expected[family] in hooks
    by_layer = {(row["layer"], row["hook"]) for row in described}
    if family == "smollm3":  # layer 3 has no positions: no rotation there, and so no RoPE step
        assert (2, "rot_q") in by_layer and (3, "rot_q") not in by_layer
    if family == "qwen3_moe":  # layer 1 keeps one FFN: no router there
        assert (0, "router_probs") in by_layer and (1, "router_probs") not in by_layer and (1, "pre") in by_layer


def test_a_hook_without_a_row_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    model = load_checkpoint(WEIGHTS / "tiny-gpt").model
    monkeypatch.setattr("app.stage_descriptions.ROWS", tuple(r for r in ROWS if r.stage != "z"))
    monkeypatch.setattr("app.stage_descriptions._described", type(__import__("weakref").WeakKeyDictionary())())
    with pytest.raises(Undescribed, match="hook_z"):
        describe(model)


def test_every_row_names_a_stage_the_model_knows() -> None:
    for row in ROWS:  # stage_name refuses a stage model/hooks.py does not know
        stage_name(row.stage, 0 if row.block else None, cross=row.cross)
    assert len({(r.stage, r.cross) for r in ROWS}) == len(ROWS)


def test_the_api_serves_the_descriptions(client: TestClient) -> None:
    # GET /api/models/{name} lists them; POST /api/stages gives the same for a name, and describes a from-scratch
    # config (which has no GET); bad input is a 4xx
    listed = client.get("/api/models/translator").json()["stages"]
    assert post(client, "/api/stages", {"model": "translator"}).json() == listed
    assert {(r["stack"], r["site"], r["hook"], r["step"]) for r in listed} >= {
        ("encoder", None, "embed", "embed"), ("decoder", "cross_attn", "pattern", "cross_softmax"),
        (None, None, "logits", "logits")}
    config = {"architecture": "decoder", "d_model": 16, "n_layers": 3, "n_heads": 2, "pos_encoding": "rope",
              "norm_placement": "post"}
    inline = post(client, "/api/stages", {"config": config}).json()
    assert {r["layer"] for r in inline} == {None, 0, 1, 2}
    assert [r["main"] for r in inline if r["step"] == "resid_mid" and r["layer"] == 0] == [True, False]  # Post-LN
    assert error_of(post(client, "/api/stages", {"model": "nope"}))[:2] == (404, "unknown_model")
    assert error_of(post(client, "/api/stages", {"model": "gpt", "config": config}))[:2] == (
        422, "conflicting_fields")
