"""SmolLM3 (transformers' SmolLM3ForCausalLM, llama.cpp's smollm3): layers without positions (NoPE) from Hugging Face
directories and GGUF files the tests write; parity with transformers over 100 positions on the same (dequantized)
weights, the NoPE layers' q and k left unturned, and the refusals by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from checkpoints import load_checkpoint
from checkpoints.base import CheckpointError
from checkpoints.hf import convert_hf
from tests.checkpoints.gguf_files import byte_level_vocab, gguf, transformers, write_gguf
from tests.checkpoints.test_families import save_hf_directory

TOL = 1e-4
POSITIONS = 100


def tiny_smollm3(seed: int = 0, tied: bool = False, **changes: Any) -> Any:
    """A random SmolLM3ForCausalLM: 4 layers × 64, 4 query / 2 K/V heads, norms away from 1; layer 3 NoPE by default
    (every fourth layer, as llama.cpp assumes)."""
    torch.manual_seed(seed)
    config = transformers.SmolLM3Config(**{
        "vocab_size": len(byte_level_vocab()[0]), "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 4,
        "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 256,
        "rope_parameters": {"rope_type": "default", "rope_theta": 1000.0}, "attn_implementation": "eager",
        "tie_word_embeddings": tied, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2, **changes})
    model = transformers.SmolLM3ForCausalLM(config)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "norm" in name:
                param.copy_(1.0 + 0.3 * torch.randn_like(param))
            elif name.endswith(".bias"):
                param.copy_(0.2 * torch.randn_like(param))
    return model.eval()


def compare(ours: torch.nn.Module, hf: Any) -> float:
    """The largest next-token log-prob difference over 100 positions; the top token equal at every position."""
    toks = torch.randint(0, hf.config.vocab_size, (1, POSITIONS), generator=torch.Generator().manual_seed(3))
    with torch.inference_mode():
        got, want = ours(toks).log_softmax(-1), hf(toks).logits.log_softmax(-1)
    assert torch.equal(got.argmax(-1), want.argmax(-1))
    return (got - want).abs().max().item()


@pytest.mark.parametrize(("changes", "nope"), [
    ({}, (3,)),
    ({"no_rope_layers": [1, 0, 1, 0]}, (1, 3)),
    ({"no_rope_layer_interval": 2, "attention_bias": True, "mlp_bias": True}, (1, 3)),
    ({"use_sliding_window": True, "sliding_window": 9}, (3,)),
], ids=["default", "no_rope_layers", "interval-biases", "window-on-nope"])
def test_directory_matches_transformers(tmp_path: Path, changes: dict[str, Any], nope: tuple[int, ...]) -> None:
    hf = tiny_smollm3(**changes)
    save_hf_directory(hf, tmp_path)
    loaded = load_checkpoint(tmp_path)
    cfg = loaded.model.cfg
    assert cfg.nope_layers == nope
    assert [cfg.has_positions(layer) for layer in range(4)] == [layer not in nope for layer in range(4)]
    if "sliding_window" in changes:
        assert (cfg.sliding_window, cfg.window_layers) == (9, nope)
    assert compare(loaded.model, hf) <= TOL


def test_nope_layers_turn_nothing() -> None:
    """A NoPE layer records no rotated q or k, and its scores are those of the unturned q and k."""
    hf = tiny_smollm3()
    cfg, state = convert_hf(hf.config.to_dict(), dict(hf.state_dict()))
    from checkpoints import build_model

    model = build_model(cfg, state)
    _, trace = model.run_with_trace(torch.arange(3, 23)[None])
    assert "blocks.3.attn.hook_rot_q" not in trace and "blocks.2.attn.hook_rot_q" in trace
    q, k = trace["blocks.3.attn.hook_q"], trace["blocks.3.attn.hook_k"].repeat_interleave(2, dim=2)
    torch.testing.assert_close(trace["blocks.3.attn.hook_scores_raw"], torch.einsum("bqhd,bkhd->bhqk", q, k))


@pytest.mark.parametrize("qtype", ["F32", "F16", "Q8_0"])
def test_gguf_matches_transformers(tmp_path: Path, qtype: str) -> None:
    """llama.cpp's smollm3: Q/K rows permuted (LlamaModel), every fourth layer without RoPE (no key says so)."""
    hf = tiny_smollm3(tied=qtype == "Q8_0")
    path = tmp_path / f"smollm3-{qtype}.gguf"
    hf.load_state_dict(write_gguf(path, hf, "smollm3", gguf.GGMLQuantizationType[qtype], pre="llama-bpe"),
                       strict=True)
    loaded = load_checkpoint(path)
    assert loaded.model.cfg.nope_layers == (3,) and loaded.meta["tensor_types"].get(qtype)
    assert compare(loaded.model, hf) <= TOL


@pytest.mark.parametrize(("change", "named"), [
    ({"no_rope_layers": [1, 2, 1, 0]}, "no_rope_layers = [1, 2, 1, 0]"),
    ({"no_rope_layers": [1, 0]}, "no_rope_layers = [1, 0]"),
    ({"no_rope_layer_interval": 0, "no_rope_layers": None}, "no_rope_layer_interval = 0"),
    ({"layer_types": ["chunked_attention"] * 4}, "layer_types = ['chunked_attention'"),
    ({"layer_types": ["sliding_attention"] * 4}, "names sliding layers without a window"),
    ({"max_window_layers": 2}, "max_window_layers = 2"),
])
def test_fields_refused_by_name(change: dict[str, Any], named: str) -> None:
    hf = tiny_smollm3()
    with pytest.raises(CheckpointError, match=named.replace("[", r"\[")):
        convert_hf(hf.config.to_dict() | change, dict(hf.state_dict()))
