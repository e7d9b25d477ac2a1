"""Training snapshots: the same model with the weights it had earlier in training."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from safetensors.torch import save_file

from app.catalogue import add_directory
from app.factory import create_app
from app.registry import Registry
from checkpoints import save_checkpoint
from model.config import TransformerConfig
from model.tokenizer import CharTokenizer
from model.transformer import Transformer
from tests.app.conftest import error_of, make_settings, post


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> TestClient:
    tmp = tmp_path_factory.mktemp("snap")
    cfg = TransformerConfig(d_model=32, n_layers=2, n_heads=4, vocab_size=256, n_ctx=64, pos_encoding="rope", seed=1)
    final = Transformer(cfg)
    early = Transformer(cfg.replace(seed=2))
    directory = tmp / "learner"
    meta = {"snapshots": [{"step": 10, "file": "snapshots/step-000010.safetensors", "val_loss": 5.0}]}
    save_checkpoint(directory, final, CharTokenizer(), meta)
    (directory / "snapshots").mkdir()
    state = {k: v for k, v in early.state_dict().items() if k != "W_U.weight"}  # tied, stored once
    save_file({k: v.contiguous() for k, v in state.items()}, str(directory / "snapshots/step-000010.safetensors"))
    registry = Registry(default="learner")
    add_directory(registry, "learner", directory)
    with TestClient(create_app(make_settings(tmp), registry)) as c:
        yield c


def test_snapshot_gives_the_earlier_weights(client: TestClient) -> None:
    body = {"model": "learner", "text": "abc", "stages": ["blocks.0.attn.hook_pattern"], "top_k": 0}
    final = post(client, "/api/trace", body).json()["stages"]["blocks.0.attn.hook_pattern"]["data"]
    early = post(client, "/api/trace", {**body, "snapshot": 10}).json()["stages"]["blocks.0.attn.hook_pattern"]["data"]
    again = post(client, "/api/trace", body).json()["stages"]["blocks.0.attn.hook_pattern"]["data"]
    assert early != final and again == final  # and the cache keeps the two apart
    info = client.get("/api/models/learner").json()
    assert info["meta"]["snapshots"][0]["step"] == 10


def test_unknown_snapshot_is_a_clear_422(client: TestClient) -> None:
    status, code, message = error_of(post(client, "/api/trace", {"model": "learner", "text": "abc", "snapshot": 7}))
    assert (status, code) == (422, "unknown_snapshot")
    assert "step 7" in message and "10" in message
    status, code, _ = error_of(post(client, "/api/trace", {"config": {"n_heads": 2}, "text": "abc", "snapshot": 10}))
    assert (status, code) == (422, "conflicting_fields")


def test_snapshot_files_stay_inside_the_checkpoint(tmp_path: Path) -> None:
    from checkpoints import CheckpointError, load_snapshot

    with pytest.raises(CheckpointError, match="not a file inside"):
        load_snapshot(tmp_path, "../../etc/passwd", TransformerConfig(), "cpu")
