"""bench/big_model.py's synthetic files open with the loaders (checkpoints/gguf*.py) as the shape says: a Llama one
and a Qwen3.5 hybrid (GGUF qwen35: gated DeltaNet layers and every fourth one gated attention), every parameter the
bench counts present, the logits finite."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from bench.big_model import SHAPES, write_file
from checkpoints import load_checkpoint

pytest.importorskip("gguf")


@pytest.mark.parametrize(("shape", "deltanet"), [("tiny", None), ("qwen35-tiny", (0, 1, 2))])
def test_the_synthetic_file_opens_as_its_shape(tmp_path: Path, shape: str, deltanet: tuple[int, ...] | None) -> None:
    path = tmp_path / f"{shape}.gguf"
    write_file(path, SHAPES[shape])
    loaded = load_checkpoint(path)
    cfg = loaded.model.cfg
    assert cfg.deltanet_layers == deltanet and cfg.d_model == SHAPES[shape].d_model
    assert sum(p.numel() for p in loaded.model.parameters()) == SHAPES[shape].parameters()
    with torch.inference_mode():
        logits = loaded.model(torch.tensor([[1, 2, 3, 4, 5, 6]]))
    assert logits.shape == (1, 6, SHAPES[shape].vocab) and bool(logits.isfinite().all()) and float(logits.std()) > 0
