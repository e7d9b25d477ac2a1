"""StarCoder2 ("starcoder2") from a Hugging Face directory and a GGUF file the test writes: a tiny random
Starcoder2ForCausalLM, loaded into the from-scratch decoder, gives transformers' next-token log-probs within 1e-4 and
the same top token at every position: with and without biases, with a window that bites, with tied embeddings; the
GGUF file as llama.cpp writes it (F32, F16, Q8_0), against transformers holding the weights the file holds."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from checkpoints import CheckpointError, load_checkpoint
from tests.checkpoints.gguf_files import gguf, write_gguf
from tests.checkpoints.test_families import N_TOKENS, TOL, compare, save_hf_directory, tokens, transformers


def tiny_starcoder2(use_bias: bool = True, window: int | None = None, tied: bool = False) -> torch.nn.Module:
    torch.manual_seed(0)
    config = transformers.Starcoder2Config(
        vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=128, use_bias=use_bias, sliding_window=window,
        tie_word_embeddings=tied, rope_theta=1000.0,
    )
    model = transformers.Starcoder2ForCausalLM(config).eval()
    with torch.no_grad():  # LayerNorm gains and biases away from 1 and 0, so a mix-up shows
        for name, parameter in model.named_parameters():
            if "layernorm" in name or name.startswith("model.norm") or name.endswith("bias"):
                parameter.add_(0.2 * torch.randn_like(parameter))
    return model


@pytest.mark.parametrize(("use_bias", "window", "tied"), [(True, None, False), (False, None, True), (True, 7, False)])
def test_starcoder2_directory_matches_transformers(tmp_path: Path, use_bias: bool, window: int | None,
                                                    tied: bool) -> None:
    hf = tiny_starcoder2(use_bias, window, tied)
    save_hf_directory(hf, tmp_path)
    loaded = load_checkpoint(tmp_path)
    cfg = loaded.model.cfg
    assert (cfg.norm, cfg.activation, cfg.bias, cfg.sliding_window) == ("layernorm", "gelu_tanh", use_bias, window)
    assert compare(loaded.model, hf, tokens(cfg.vocab_size)) <= TOL
    if window:  # the window is what makes them equal: without it the same weights are far off
        plain = tiny_starcoder2(use_bias, None, tied)
        plain.load_state_dict(hf.state_dict())
        toks = tokens(cfg.vocab_size)
        with torch.inference_mode():
            assert (plain(toks).logits - hf(toks).logits)[0, N_TOKENS - 1].abs().max().item() > 10 * TOL


def test_starcoder2_fields_not_implemented_are_refused(tmp_path: Path) -> None:
    hf = tiny_starcoder2()
    save_hf_directory(hf, tmp_path)
    config = (tmp_path / "config.json").read_text()
    (tmp_path / "config.json").write_text(config.replace('"use_bias"', '"qk_layernorm": true, "use_bias"'))
    with pytest.raises(CheckpointError, match="qk_layernorm = True"):
        load_checkpoint(tmp_path)


def gguf_keys(hf: torch.nn.Module) -> dict[str, object]:
    """What llama.cpp's converter writes for StarCoder2 besides the keys every file has: its LayerNorm epsilon and
    the vocabulary size (the embedding has more rows than the test's tokenizer has tokens)."""
    return {"starcoder2.attention.layer_norm_epsilon": hf.config.norm_epsilon,
            "starcoder2.vocab_size": hf.config.vocab_size}


@pytest.mark.parametrize("qtype", ["F32", "F16", "Q8_0"])
def test_starcoder2_gguf_matches_transformers(tmp_path: Path, qtype: str) -> None:
    hf = tiny_starcoder2(tied=qtype == "Q8_0")
    path = tmp_path / f"starcoder2-{qtype}.gguf"
    reference = write_gguf(path, hf, "starcoder2", gguf.GGMLQuantizationType[qtype], pre="starcoder",
                           extra=gguf_keys(hf))
    hf.load_state_dict(reference, strict=True)
    loaded = load_checkpoint(path)
    cfg = loaded.model.cfg
    assert (cfg.norm, cfg.activation, cfg.bias, cfg.kv_heads) == ("layernorm", "gelu_tanh", True, 2)
    assert loaded.meta["tokenizer_pre"] == "starcoder"
    assert compare(loaded.model, hf, tokens(cfg.vocab_size)) <= TOL


def test_a_starcoder2_gguf_without_biases_is_refused(tmp_path: Path) -> None:
    hf = tiny_starcoder2(use_bias=False)
    path = tmp_path / "no-bias.gguf"
    write_gguf(path, hf, "starcoder2", gguf.GGMLQuantizationType.F32, pre="starcoder",
               extra=gguf_keys(hf))
    with pytest.raises(CheckpointError, match="the file has no tensor 'blk.0.attn_q.bias'"):
        load_checkpoint(path)
