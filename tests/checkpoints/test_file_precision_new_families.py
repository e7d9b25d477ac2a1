"""Phi-3 and Gemma 2 / 3 kept in the file's precision (a float32 budget of 0): Phi-3's fused QKV and gate/up
matrices split as stored weights over the same file rows, and Gemma's loaders, give the float32 path's numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from model.stored_weights import StoredWeight
from tests.checkpoints.gguf_files import gguf
from tests.checkpoints.test_file_precision import IDS, assert_same_pass, both
from tests.checkpoints.test_gemma import tiny_gemma, write_gemma_gguf
from tests.checkpoints.test_phi_family import tiny_phi3, write_phi3_gguf

Q = gguf.GGMLQuantizationType


@pytest.mark.parametrize("qtype", [Q.F16, Q.Q8_0], ids=lambda q: q.name)
def test_phi3_fused_matrices_split_while_stored(tmp_path: Path, qtype: object) -> None:
    path = tmp_path / "phi3.gguf"
    write_phi3_gguf(path, tiny_phi3(partial=0.5, longrope=True), qtype)
    eager, stored = both(path)
    attn = stored.stack.blocks[0].attn
    assert isinstance(attn.W_Q.weight, StoredWeight) and isinstance(attn.W_K.weight, StoredWeight)
    assert isinstance(stored.stack.blocks[0].mlp.W_gate.weight, StoredWeight)
    assert int(IDS.max()) < stored.cfg.vocab_size
    assert_same_pass(eager, stored)


@pytest.mark.parametrize("arch", ["gemma2", "gemma3"])
def test_gemma_stored_gives_the_float32_numbers(tmp_path: Path, arch: str) -> None:
    path = tmp_path / f"{arch}.gguf"
    write_gemma_gguf(path, tiny_gemma(arch), arch, Q.F16)
    eager, stored = both(path)
    assert isinstance(stored.stack.blocks[0].attn.W_Q.weight, StoredWeight)
    assert_same_pass(eager, stored)
