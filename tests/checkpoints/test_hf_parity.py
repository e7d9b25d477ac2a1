"""Parity with references on the same weights: PyTorch's SDPA and Hugging Face models."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from checkpoints import load_checkpoint
from checkpoints.hf import convert_hf
from model import Transformer, TransformerConfig

transformers = pytest.importorskip("transformers")
TOL = 1e-4


@pytest.mark.parametrize("architecture", ["decoder", "encoder"])
@pytest.mark.parametrize("kv_heads", [4, 2, 1])
def test_traced_attention_equals_sdpa(architecture: str, kv_heads: int) -> None:
    cfg = TransformerConfig(
        architecture=architecture, d_model=32, n_heads=4, n_kv_heads=kv_heads, pos_encoding="rope", n_layers=1, seed=2
    )
    model = Transformer(cfg)
    toks = torch.randint(0, 256, (1, 13))
    _, trace = model.run_with_trace(toks)
    q = trace["blocks.0.attn.hook_rot_q"].transpose(1, 2)  # [batch, head, pos, d_head]
    k = trace["blocks.0.attn.hook_rot_k"].transpose(1, 2).repeat_interleave(4 // kv_heads, dim=1)
    v = trace["blocks.0.attn.hook_v"].transpose(1, 2).repeat_interleave(4 // kv_heads, dim=1)
    reference = F.scaled_dot_product_attention(
        q, k, v, is_causal=architecture == "decoder"
    )  # [batch, head, pos, d_head]
    torch.testing.assert_close(trace["blocks.0.attn.hook_z"], reference.transpose(1, 2), atol=1e-5, rtol=0)


def _hf_state(hf_model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in hf_model.state_dict().items()}


def _ours(hf_model: torch.nn.Module) -> Transformer:
    from checkpoints import build_model

    cfg, state = convert_hf(hf_model.config.to_dict(), _hf_state(hf_model))
    return build_model(cfg, state)


def tiny_gpt2(tied: bool = True) -> torch.nn.Module:
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=97, n_positions=64, n_embd=48, n_layer=3, n_head=4, tie_word_embeddings=tied
    )
    return transformers.GPT2LMHeadModel(config).eval()


def tiny_llama(kv_heads: int = 2, model_type: str = "llama") -> torch.nn.Module:
    torch.manual_seed(0)
    if model_type == "qwen2":
        config = transformers.Qwen2Config(
            vocab_size=101,
            hidden_size=64,
            intermediate_size=96,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=kv_heads,
            max_position_embeddings=128,
            tie_word_embeddings=False,
        )
        return transformers.Qwen2ForCausalLM(config).eval()
    config = transformers.LlamaConfig(
        vocab_size=101,
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=kv_heads,
        max_position_embeddings=128,
        rope_theta=500.0,
        tie_word_embeddings=False,
    )
    return transformers.LlamaForCausalLM(config).eval()


def tiny_bert() -> torch.nn.Module:
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=99,
        hidden_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=80,
        max_position_embeddings=64,
    )
    return transformers.BertModel(config, add_pooling_layer=False).eval()


@pytest.mark.parametrize("tied", [True, False])
def test_gpt2_logits_match_huggingface(tied: bool) -> None:
    hf = tiny_gpt2(tied)
    if not tied:  # make the untied head differ from the embedding so the test can tell
        with torch.no_grad():
            hf.lm_head.weight.copy_(torch.randn_like(hf.lm_head.weight) * 0.02)
    ours = _ours(hf)
    toks = torch.randint(0, 97, (1, 20))
    with torch.inference_mode():
        expected = hf(toks).logits
        got = ours(toks)
    assert (got - expected).abs().max().item() <= TOL


@pytest.mark.parametrize(("model_type", "kv_heads"), [("llama", 2), ("llama", 1), ("llama", 4), ("qwen2", 2)])
def test_llama_family_logits_match_huggingface(model_type: str, kv_heads: int) -> None:
    hf = tiny_llama(kv_heads, model_type)
    ours = _ours(hf)
    assert ours.cfg.pos_encoding == "rope" and ours.cfg.norm == "rmsnorm" and ours.cfg.activation == "swiglu"
    assert ours.cfg.kv_heads == kv_heads
    toks = torch.randint(0, 101, (1, 24))
    with torch.inference_mode():
        expected = hf(toks).logits
        got = ours(toks)
    assert (got - expected).abs().max().item() <= TOL


def test_bert_last_hidden_state_matches_huggingface() -> None:
    hf = tiny_bert()
    ours = _ours(hf)
    toks = torch.randint(0, 99, (1, 17))
    with torch.inference_mode():
        expected = hf(toks).last_hidden_state
        got = ours(toks)
    assert (got - expected).abs().max().item() <= TOL


def test_bert_padding_matches_huggingface() -> None:
    hf = tiny_bert()
    ours = _ours(hf)
    toks = torch.randint(0, 99, (2, 9))
    mask = torch.ones(2, 9, dtype=torch.long)
    mask[1, 6:] = 0
    with torch.inference_mode():
        expected = hf(toks, attention_mask=mask).last_hidden_state
        got = ours(toks, padding_mask=mask.bool())
    assert (got[0] - expected[0]).abs().max().item() <= TOL
    assert (got[1, :6] - expected[1, :6]).abs().max().item() <= TOL


def test_hf_directory_round_trip(tmp_path: Path) -> None:
    """A saved HF directory (safetensors) loads through load_checkpoint with its own tokenizer."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    hf = tiny_llama(2)
    hf.save_pretrained(tmp_path, safe_serialization=True)
    vocab = {chr(97 + i): i for i in range(26)} | {"[UNK]": 26}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    tok.save(str(tmp_path / "tokenizer.json"))
    loaded = load_checkpoint(tmp_path)
    ids = [t.id for t in loaded.tokenizer.encode("hello")]
    assert ids == [7, 4, 11, 11, 14]
    toks = torch.tensor([ids])
    with torch.inference_mode():
        assert (loaded.model(toks) - hf(toks).logits).abs().max().item() <= TOL


def test_hf_directory_errors_are_clear(tmp_path: Path) -> None:
    from checkpoints import CheckpointError

    with pytest.raises(CheckpointError, match="no config.json"):
        load_checkpoint(tmp_path)
    (tmp_path / "config.json").write_text('{"model_type": "t5"}')
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(CheckpointError, match="unsupported architecture 't5'"):
        load_checkpoint(tmp_path)
    hf = tiny_gpt2()
    hf.save_pretrained(tmp_path, safe_serialization=True)
    config = hf.config.to_dict() | {"n_embd": 64}
    import json

    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="has shape"):
        load_checkpoint(tmp_path)
