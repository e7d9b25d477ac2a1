"""A native checkpoint (checkpoints.save_checkpoint) whose config names a field the config does not have is refused
by that field's name and value, never read with the field dropped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from checkpoints import CheckpointError, load_checkpoint, save_checkpoint
from model.config import TransformerConfig
from model.tokenizer import CharTokenizer
from model.transformer import Transformer


def test_native_checkpoints_refuse_unknown_config_fields(tmp_path: Path) -> None:
    model = Transformer(TransformerConfig(d_model=16, n_heads=2, n_layers=1, vocab_size=8, n_ctx=16))
    save_checkpoint(tmp_path, model, CharTokenizer("abcdefg"))
    document = json.loads((tmp_path / "config.json").read_text())
    document["config"]["rope_scaling"] = {"factor": 2}
    (tmp_path / "config.json").write_text(json.dumps(document))
    with pytest.raises(CheckpointError, match=r"rope_scaling = \{'factor': 2\}"):
        load_checkpoint(tmp_path)
