"""Llama 3.1's RoPE scaling and Qwen3's q/k norm, from Hugging Face directories and GGUF files the tests write:
next-token log-probs equal transformers' within 1e-4 (and the same top tokens), and every RoPE scaling type
that is not implemented is refused by name."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from checkpoints import CheckpointError, load_checkpoint
from tests.checkpoints.gguf_files import LLAMA3_SCALING, byte_level_vocab, gguf, tiny_hf, transformers, write_gguf

TOL = 1e-4
QTYPES = ["F32", "F16", "Q8_0"]
N_TOKENS = 100  # past the original context of 32 that LLAMA3_SCALING names


def converter_rope_freqs(hf: torch.nn.Module) -> np.ndarray:
    """rope_freqs as llama.cpp's converter (LlamaModel.generate_extra_tensors) computes it, written out again here:
    one factor per pair, 1 for short wavelengths, `factor` for long ones, blended in between."""
    scaling = hf.config.rope_parameters
    d_head = hf.config.hidden_size // hf.config.num_attention_heads
    freqs = 1.0 / (scaling["rope_theta"] ** (torch.arange(0, d_head, 2, dtype=torch.float32) / d_head))
    old = scaling["original_max_position_embeddings"]
    low, high, factor = scaling["low_freq_factor"], scaling["high_freq_factor"], scaling["factor"]
    out = []
    for freq in freqs.tolist():
        wavelength = 2 * math.pi / freq
        if wavelength < old / high:
            out.append(1.0)
        elif wavelength > old / low:
            out.append(factor)
        else:
            smooth = (old / wavelength - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def tokens(vocab: int, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, vocab, (1, N_TOKENS), generator=torch.Generator().manual_seed(seed))


def compare(ours: torch.nn.Module, reference: torch.nn.Module, toks: torch.Tensor) -> float:
    """max |log p ours - log p transformers| over every position; the top token must agree everywhere too."""
    with torch.inference_mode():
        got = ours(toks).log_softmax(-1)
        want = reference(toks).logits.log_softmax(-1)
    assert torch.equal(got.argmax(-1), want.argmax(-1))
    return (got - want).abs().max().item()


def transformers_gguf_reader(path: Path) -> torch.nn.Module:
    """What from_pretrained(dir, gguf_file=...) builds, without `accelerate` (which that path requires): transformers'
    load_gguf_checkpoint reads the config and the dequantized, renamed tensors; its model class holds them."""
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    config = load_gguf_checkpoint(str(path), return_tensors=False)["config"]
    if config["model_type"] == "qwen3":  # its reader maps no head size: Qwen3Config's default (128, every real
        fields = gguf.GGUFReader(str(path)).fields  # Qwen3's) would not fit this tiny file's heads of 16
        key_length = fields.get("qwen3.attention.key_length")
        config["head_dim"] = (int(key_length.contents()) if key_length is not None
                              else config["hidden_size"] // config["num_attention_heads"])
    config_class = transformers.AutoConfig.for_model(config.pop("model_type")).__class__
    model = transformers.AutoModelForCausalLM.from_config(config_class(**config), attn_implementation="eager")
    tensors = load_gguf_checkpoint(str(path), return_tensors=True, model_to_load=model)["tensors"]
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    assert not unexpected and set(missing) <= {"lm_head.weight"}, (missing, unexpected)
    if missing:  # tied: no output.weight in the file
        assert model.config.tie_word_embeddings
        model.tie_weights()
    return model.float().eval()


def save_hf_directory(hf: torch.nn.Module, directory: Path) -> None:
    """save_pretrained (safetensors) and a byte-level tokenizer.json, as a downloaded model directory holds."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    hf.save_pretrained(directory, safe_serialization=True)
    vocab_tokens, merges, _ = byte_level_vocab()
    vocab = {token: i for i, token in enumerate(vocab_tokens)}
    tok = Tokenizer(models.BPE(vocab, [tuple(m.split(" ")) for m in merges]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.save(str(directory / "tokenizer.json"))


# ---------------------------------------------------------------- Hugging Face directories


@pytest.mark.parametrize("scaling", [LLAMA3_SCALING, {"rope_type": "linear", "factor": 3.0}],
                         ids=["llama3", "linear"])
def test_scaled_llama_directory_matches_transformers(tmp_path: Path, scaling: dict[str, Any]) -> None:
    hf = tiny_hf("llama", rope_scaling=scaling)
    save_hf_directory(hf, tmp_path)
    assert json.loads((tmp_path / "config.json").read_text())["rope_parameters"]["rope_type"] == scaling["rope_type"]
    loaded = load_checkpoint(tmp_path)
    factors = loaded.model.cfg.rope_freq_factors
    assert factors is not None and len(factors) == 8 and max(factors) == scaling["factor"]
    toks = tokens(loaded.model.cfg.vocab_size)
    assert compare(loaded.model, hf, toks) <= TOL
    # the scaling is what makes them equal: the same weights unscaled are far off
    plain = tiny_hf("llama")
    plain.load_state_dict(hf.state_dict())
    with torch.inference_mode():
        assert (plain(toks).logits - hf(toks).logits).abs().max().item() > 10 * TOL


def test_qwen3_directory_matches_transformers(tmp_path: Path) -> None:
    hf = tiny_hf("qwen3")
    save_hf_directory(hf, tmp_path)
    loaded = load_checkpoint(tmp_path)
    cfg = loaded.model.cfg
    assert cfg.qk_norm and not cfg.use_qkv_bias and cfg.rope_freq_factors is None
    toks = tokens(cfg.vocab_size)
    assert compare(loaded.model, hf, toks) <= TOL
    # each head's q and k, normalized, are traced: RMS over d_head equals the norm's weight pattern, not 1
    _, trace = loaded.model.run_with_trace(toks)
    normed = trace["blocks.0.attn.hook_norm_q"]  # [batch, pos, head, d_head]
    assert normed.shape == (1, N_TOKENS, 4, 16)
    weight = hf.model.layers[0].self_attn.q_norm.weight.detach()
    assert torch.allclose((normed / weight).pow(2).mean(-1), torch.ones(1, N_TOKENS, 4), atol=1e-3)


# ---------------------------------------------------------------- GGUF files


@pytest.mark.parametrize("qtype", QTYPES)
def test_llama3_gguf_matches_transformers(tmp_path: Path, qtype: str) -> None:
    """A Llama 3.1-style file: the rope_freqs tensor and no rope.scaling key, as llama.cpp's converter writes it.
    transformers' GGUF reader leaves rope_freqs out (it would compute unscaled RoPE), so the reference is
    transformers' LlamaForCausalLM with the llama3 config, holding the weights the file holds."""
    hf = tiny_hf("llama", rope_scaling=LLAMA3_SCALING, tied=qtype == "Q8_0")
    path = tmp_path / f"llama3-{qtype}.gguf"
    rope_freqs = converter_rope_freqs(hf)
    reference = write_gguf(path, hf, "llama", gguf.GGMLQuantizationType[qtype], pre="llama-bpe",
                           add={"rope_freqs.weight": (rope_freqs, None)})
    hf.load_state_dict(reference, strict=True)
    loaded = load_checkpoint(path)
    assert loaded.model.cfg.rope_freq_factors == pytest.approx(tuple(rope_freqs.tolist()), rel=1e-6)
    assert compare(loaded.model, hf, tokens(loaded.model.cfg.vocab_size)) <= TOL


@pytest.mark.parametrize("qtype", ["F32", "Q8_0"])
def test_linear_scaled_gguf_matches_transformers(tmp_path: Path, qtype: str) -> None:
    hf = tiny_hf("llama", rope_scaling={"rope_type": "linear", "factor": 2.5})
    path = tmp_path / "linear.gguf"
    reference = write_gguf(path, hf, "llama", gguf.GGMLQuantizationType[qtype],
                           extra={"llama.rope.scaling.type": "linear", "llama.rope.scaling.factor": 2.5,
                                  "llama.rope.scaling.original_context_length": 32})
    hf.load_state_dict(reference, strict=True)
    loaded = load_checkpoint(path)
    assert loaded.model.cfg.rope_freq_factors == (2.5,) * 8
    assert compare(loaded.model, hf, tokens(loaded.model.cfg.vocab_size)) <= TOL


@pytest.mark.parametrize("qtype", QTYPES)
def test_qwen3_gguf_matches_transformers_reading_the_same_file(tmp_path: Path, qtype: str) -> None:
    """The reference is transformers' own GGUF reader on the same file (its config and its tensors)."""
    hf = tiny_hf("qwen3", tied=qtype == "Q8_0")
    path = tmp_path / f"qwen3-{qtype}.gguf"
    write_gguf(path, hf, "qwen3", gguf.GGMLQuantizationType[qtype],
               extra={"qwen3.attention.key_length": 16, "qwen3.attention.value_length": 16})
    reference = transformers_gguf_reader(path)
    assert type(reference).__name__ == "Qwen3ForCausalLM"
    loaded = load_checkpoint(path)
    assert loaded.model.cfg.qk_norm and loaded.meta["gguf_architecture"] == "qwen3"
    assert compare(loaded.model, reference, tokens(loaded.model.cfg.vocab_size)) <= TOL


# ---------------------------------------------------------------- refusals, by name


@pytest.mark.parametrize(("field", "scaling", "named"), [
    ("rope_scaling", {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32},
     "rope_scaling.rope_type = 'yarn' is not implemented"),
    ("rope_scaling", {"type": "dynamic", "factor": 2.0}, "rope_scaling.type = 'dynamic' is not implemented"),
    ("rope_scaling", {"rope_type": "longrope", "short_factor": [1.0] * 8, "long_factor": [2.0] * 8},
     "rope_scaling.rope_type = 'longrope' is not implemented"),
    ("rope_parameters", {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0},
     "lacks original_max_position_embeddings"),
    ("rope_parameters", {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0, "high_freq_factor": 1.0,
                         "original_max_position_embeddings": 32}, "high_freq_factor > low_freq_factor"),
    ("rope_parameters", {"rope_type": "linear", "factor": 2.0, "attention_factor": 0.5},
     "rope_parameters.attention_factor = 0.5 is not implemented"),
    ("rope_parameters", {"rope_type": "linear", "factor": "2"}, "rope_parameters.factor = '2' is not a number"),
    ("rope_parameters", {"rope_type": "linear", "factor": 0.0}, "rope_parameters.factor = 0.0 must be above 0"),
    ("rope_parameters", {"rope_type": ["llama3"]}, "rope_parameters.rope_type = ['llama3'] is not implemented"),
    ("rope_scaling", "llama3", "rope_scaling = 'llama3' is not implemented"),
])
def test_hf_rope_scaling_not_implemented_is_refused(field: str, scaling: Any, named: str) -> None:
    from checkpoints.hf import convert_hf

    hf = tiny_hf("llama")
    config = hf.config.to_dict()
    config.pop("rope_parameters")
    config[field] = scaling
    with pytest.raises(CheckpointError, match=re.escape(named)):
        convert_hf(config, hf.state_dict())


@pytest.mark.parametrize(("extra", "named"), [
    ({"llama.rope.scaling.type": "yarn", "llama.rope.scaling.factor": 4.0}, "rope.scaling.type = 'yarn'"),
    ({"llama.rope.scaling.type": "longrope"}, "rope.scaling.type = 'longrope'"),
    ({"llama.rope.scaling.factor": 4.0}, "rope.scaling.factor = 4.0 (RoPE scaling) is not implemented without"),
])
def test_gguf_rope_scaling_not_implemented_is_refused(tmp_path: Path, extra: dict[str, Any], named: str) -> None:
    path = tmp_path / "scaled.gguf"
    write_gguf(path, tiny_hf("llama"), "llama", gguf.GGMLQuantizationType.F32, extra=extra)
    with pytest.raises(CheckpointError, match=named.replace("(", r"\(").replace(")", r"\)")):
        load_checkpoint(path)


def test_gguf_rope_freqs_of_the_wrong_size_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad-freqs.gguf"
    write_gguf(path, tiny_hf("llama"), "llama", gguf.GGMLQuantizationType.F32,
               add={"rope_freqs.weight": (np.ones(5, dtype=np.float32), None)})
    with pytest.raises(CheckpointError, match="rope_freqs.weight has 5 factors, but a head of 16 dimensions has 8"):
        load_checkpoint(path)


def test_q_and_k_norms_outside_qwen3_are_refused(tmp_path: Path) -> None:
    """A qwen3 file's norms written under the llama architecture are not silently dropped."""
    path = tmp_path / "llama-with-qk-norm.gguf"
    hf = tiny_hf("qwen3")
    write_gguf(path, hf, "llama", gguf.GGMLQuantizationType.F32)
    with pytest.raises(CheckpointError, match=r"blk.0.attn_k_norm.weight \(a norm on each head's k"):
        load_checkpoint(path)
