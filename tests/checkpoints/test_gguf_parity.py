"""GGUF files the tests write (tiny random llama / mistral / qwen2, F32 / F16 / Q8_0 / Q4_1) load into the
from-scratch modules and match transformers on the same dequantized weights."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from checkpoints import load_checkpoint
from checkpoints.gguf_tensors import unpermute
from tests.checkpoints.gguf_files import gguf, llama_cpp_permute, tiny_gpt2, tiny_hf, write_gguf, write_gpt2_gguf

TOL = 1e-4
QTYPES = ["F32", "F16", "Q8_0", "Q4_1"]


def hf_reference(hf: torch.nn.Module, reference: dict[str, torch.Tensor]) -> torch.nn.Module:
    """hf with the weights the file really holds (quantization error included)."""
    hf.load_state_dict(reference, strict=True)
    return hf


@pytest.mark.parametrize("qtype", QTYPES)
@pytest.mark.parametrize("arch", ["llama", "qwen2", "mistral"])
def test_gguf_matches_transformers(tmp_path: Path, arch: str, qtype: str) -> None:
    hf = tiny_hf(arch, tied=qtype == "Q8_0")  # one tied case per architecture: no output.weight in the file
    path = tmp_path / f"tiny-{arch}-{qtype}.gguf"
    reference = write_gguf(path, hf, arch, gguf.GGMLQuantizationType[qtype])
    hf = hf_reference(hf, reference)
    loaded = load_checkpoint(path)
    cfg = loaded.model.cfg
    assert (cfg.n_heads, cfg.kv_heads, cfg.n_layers, cfg.d_mlp) == (4, 2, 2, 96)
    assert cfg.use_qkv_bias == (arch == "qwen2") and cfg.tied_embeddings == (qtype == "Q8_0")
    assert loaded.meta["tensor_types"].get(qtype if qtype != "F32" else "F32")
    toks = torch.randint(0, cfg.vocab_size, (1, 21), generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        expected = hf(toks, output_hidden_states=True, output_attentions=True)
        logits, trace = loaded.model.run_with_trace(toks)
    got_lp, want_lp = logits.log_softmax(-1), expected.logits.log_softmax(-1)
    assert (got_lp - want_lp).abs().max().item() <= TOL
    for layer in range(cfg.n_layers):
        assert (trace[f"blocks.{layer}.hook_resid_pre"] - expected.hidden_states[layer]).abs().max() <= TOL
        assert (trace[f"blocks.{layer}.attn.hook_pattern"] - expected.attentions[layer]).abs().max() <= TOL


def test_quantization_error_is_real(tmp_path: Path) -> None:
    """Q4_1 really changes the weights (so the parity above compares dequantized values, not the originals)."""
    hf = tiny_hf("llama")
    original = {k: v.clone() for k, v in hf.state_dict().items()}
    reference = write_gguf(tmp_path / "q.gguf", hf, "llama", gguf.GGMLQuantizationType.Q4_1)
    change = (reference["model.layers.0.mlp.up_proj.weight"] - original["model.layers.0.mlp.up_proj.weight"]).abs()
    assert change.max() > 1e-4


@pytest.mark.parametrize(("n_head", "n_head_kv"), [(4, None), (8, 2), (9, 3)])
def test_unpermute_inverts_llama_cpp_permute(n_head: int, n_head_kv: int | None) -> None:
    heads = n_head_kv or n_head
    weight = torch.randn(heads * 16, 24)
    permuted = llama_cpp_permute(weight, n_head, n_head_kv)
    assert not torch.equal(permuted, weight)
    assert torch.equal(unpermute(permuted, heads), weight)
    bias = torch.randn(heads * 16)
    assert torch.equal(unpermute(llama_cpp_permute(bias, n_head, n_head_kv), heads), bias)


def test_qwen2_is_not_unpermuted(tmp_path: Path) -> None:
    """qwen2 files are stored unpermuted: reading them as llama would change the numbers."""
    hf = tiny_hf("qwen2")
    path = tmp_path / "q.gguf"
    reference = write_gguf(path, hf, "qwen2", gguf.GGMLQuantizationType.F32)
    loaded = load_checkpoint(path)
    w_q = loaded.model.state_dict()["stack.blocks.0.attn.W_Q.weight"]
    assert torch.equal(w_q, reference["model.layers.0.self_attn.q_proj.weight"])


@pytest.mark.parametrize("qtype", ["F32", "Q8_0"])
def test_gpt2_gguf_matches_transformers(tmp_path: Path, qtype: str) -> None:
    hf = tiny_gpt2()
    path = tmp_path / f"gpt2-{qtype}.gguf"
    reference = write_gpt2_gguf(path, hf, gguf.GGMLQuantizationType[qtype])
    hf.load_state_dict(reference, strict=False)  # the causal-mask buffers are not weights
    loaded = load_checkpoint(path)
    assert loaded.model.cfg.pos_encoding == "learned" and loaded.model.cfg.activation == "gelu_tanh"
    toks = torch.randint(0, loaded.model.cfg.vocab_size, (1, 19), generator=torch.Generator().manual_seed(2))
    with torch.inference_mode():
        expected = hf(toks, output_attentions=True)
        logits, trace = loaded.model.run_with_trace(toks)
    assert (logits.log_softmax(-1) - expected.logits.log_softmax(-1)).abs().max().item() <= TOL
    for layer in range(2):
        assert (trace[f"blocks.{layer}.attn.hook_pattern"] - expected.attentions[layer]).abs().max() <= TOL


def test_sentencepiece_llama_file(tmp_path: Path) -> None:
    """A llama file with a SentencePiece tokenizer (Llama 2, TinyLlama): the tokens llama.cpp would make,
    the start token the file asks for (app.tokenizing adds it from the meta), and the numbers of transformers."""
    from app.tokenizing import encode_text
    from tests.checkpoints.test_gguf_tokenizer import llama_cpp_spm, spm_metadata

    spm = spm_metadata()
    hf = tiny_hf("llama", vocab=len(spm["tokenizer.ggml.tokens"]))
    path = tmp_path / "spm.gguf"
    hf = hf_reference(hf, write_gguf(path, hf, "llama", gguf.GGMLQuantizationType.Q8_0, spm=spm))
    loaded = load_checkpoint(path)
    assert loaded.tokenizer.kind == "sentencepiece" and loaded.meta["prepend_bos"]
    tokens = encode_text(loaded, "the cats sat 世界")
    ids = [t.id for t in tokens]
    assert ids == [1, *llama_cpp_spm(spm, "the cats sat 世界")]  # <s> first
    with torch.inference_mode():
        got, expected = loaded.model(torch.tensor([ids])), hf(torch.tensor([ids])).logits
    assert (got.log_softmax(-1) - expected.log_softmax(-1)).abs().max().item() <= TOL
