"""bench/llama_cpp_parity.py: its own arithmetic (KL, top-1, |Δ log-prob|) on made-up distributions, the F32 copy
it writes, and, where llama-cpp-python is installed, llama.cpp against us on a tiny file (skipped otherwise)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from bench.llama_cpp_parity import Divergence, divergence, joined, requantize, tensor_types, write_f32
from checkpoints import load_checkpoint
from checkpoints.gguf import open_reader
from tests.checkpoints.gguf_files import gguf, tiny_hf, write_gguf


def logits_of(*rows: list[float]) -> torch.Tensor:
    """Probabilities [pos, d_vocab] -> logits (log-probs plus an arbitrary shift per row)."""
    return torch.tensor(rows, dtype=torch.float64).log() + torch.arange(len(rows)).unsqueeze(-1) * 3.0


def test_identical_distributions_do_not_differ() -> None:
    ours = torch.randn(5, 11, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    result = divergence(ours, ours + 7.0)  # a shift of the logits changes no probability
    assert result.max_gap <= 1e-12 and result.max_kl <= 1e-12 and result.top1 == 1.0


def test_kl_gap_and_top1_on_made_up_distributions() -> None:
    ours = logits_of([0.75, 0.25], [0.25, 0.75])
    theirs = logits_of([0.5, 0.5], [0.6, 0.4])
    result = divergence(ours, theirs)
    want_kl = [0.75 * math.log(0.75 / 0.5) + 0.25 * math.log(0.25 / 0.5),
               0.25 * math.log(0.25 / 0.6) + 0.75 * math.log(0.75 / 0.4)]
    assert result.kl == pytest.approx(want_kl, abs=1e-12)
    assert result.mean_kl == pytest.approx(sum(want_kl) / 2, abs=1e-12)
    assert result.agree == [True, False] and result.top1 == 0.5  # argmax 0 vs 0 (a tie broken to 0), then 1 vs 0
    assert result.max_gap == pytest.approx(math.log(0.6 / 0.25), abs=1e-12)
    assert result.last_gap == pytest.approx(math.log(0.6 / 0.25), abs=1e-12)


def test_kl_is_ours_against_theirs_not_the_reverse() -> None:
    ours, theirs = logits_of([0.9, 0.1]), logits_of([0.5, 0.5])
    assert divergence(ours, theirs).kl[0] == pytest.approx(0.9 * math.log(1.8) + 0.1 * math.log(0.2), abs=1e-12)
    assert divergence(theirs, ours).kl[0] == pytest.approx(0.5 * math.log(0.5 / 0.9) + 0.5 * math.log(5), abs=1e-12)


def test_texts_joined_pool_their_positions() -> None:
    a = Divergence(0.1, 0.05, [0.0, 0.2], [True, True])
    b = Divergence(0.3, 0.01, [0.4], [False])
    total = joined([a, b])
    assert (total.max_gap, total.last_gap) == (0.3, 0.05)
    assert total.mean_kl == pytest.approx(0.2) and total.max_kl == 0.4 and total.top1 == pytest.approx(2 / 3)


def tiny_file(tmp_path: Path, qtype: str) -> Path:
    path = tmp_path / f"tiny-{qtype}.gguf"
    write_gguf(path, tiny_hf("llama"), "llama", gguf.GGMLQuantizationType[qtype])
    return path


def test_the_f32_copy_holds_the_same_weights_and_metadata(tmp_path: Path) -> None:
    source, copy = tiny_file(tmp_path, "Q8_0"), tmp_path / "copy-f32.gguf"
    write_f32(source, copy)
    assert set(tensor_types(copy)) == {"F32"} and set(tensor_types(source)) == {"F32", "Q8_0"}
    fields = {name: entry.contents() for name, entry in open_reader(source).fields.items() if "GGUF." not in name}
    copied = {name: entry.contents() for name, entry in open_reader(copy).fields.items() if "GGUF." not in name}
    fields.pop("general.file_type", None)
    assert copied.pop("general.file_type") == 0 and fields == copied
    tokens = torch.randint(0, 200, (1, 17), generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        want, got = load_checkpoint(source).model(tokens), load_checkpoint(copy).model(tokens)
    assert (want - got).abs().max().item() <= 1e-6  # float32 weights equal to the dequantized ones


def test_llama_cpp_reads_the_f32_file_as_we_do(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    from bench.llama_cpp_parity import LlamaCpp

    path = tiny_file(tmp_path, "F32")
    ids = torch.randint(3, 200, (19,), generator=torch.Generator().manual_seed(2)).tolist()
    llama = LlamaCpp(path, threads=2, n_ctx=32, kv_cache="f32")
    try:
        theirs = llama.logits(ids)
    finally:
        llama.close()
    with torch.inference_mode():
        ours = load_checkpoint(path).model(torch.tensor([ids]))[0]
    result = divergence(ours, theirs)
    assert result.max_gap <= 2e-4 and result.top1 == 1.0


def test_llama_cpp_requantizes_and_we_read_its_file(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    source, target = tiny_file(tmp_path, "F32"), tmp_path / "tiny-q8.gguf"
    requantize(source, target, "Q8_0", threads=2)
    assert "Q8_0" in tensor_types(target)
    assert load_checkpoint(target).model.cfg.n_layers == 2
