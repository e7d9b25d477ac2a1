"""GGUF files the tests write themselves with gguf.GGUFWriter, from tiny random transformers models, laid out
as llama.cpp's converter (convert_hf_to_gguf.py) lays them out: Q/K rows permuted for llama and mistral."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

gguf = __import__("pytest").importorskip("gguf")
transformers = __import__("pytest").importorskip("transformers")

from model.tokenizer import _bytes_to_unicode  # noqa: E402

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MERGES = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"), ("Ġ", "a")]


def byte_level_vocab() -> tuple[list[str], list[str], list[int]]:
    """Specials, the 256 byte characters, then what the merges make: tokens, merges, token types."""
    tokens = SPECIALS + list(_bytes_to_unicode().values()) + [a + b for a, b in MERGES]
    types = [3] * len(SPECIALS) + [1] * (len(tokens) - len(SPECIALS))
    return tokens, [f"{a} {b}" for a, b in MERGES], types


def llama_cpp_permute(weights: torch.Tensor, n_head: int, n_head_kv: int | None) -> torch.Tensor:
    """llama.cpp's LlamaModel.permute (convert_hf_to_gguf.py), reimplemented."""
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return (weights.reshape(n_head, 2, weights.shape[0] // n_head // 2, *weights.shape[1:])
            .swapaxes(1, 2)
            .reshape(weights.shape))


def llama_cpp_unpermute(weights: torch.Tensor, n_head: int) -> torch.Tensor:
    """The test's own inverse of llama_cpp_permute (so the reference does not use the loader's)."""
    rows = weights.shape[0]
    return (weights.reshape(n_head, rows // n_head // 2, 2, *weights.shape[1:])
            .swapaxes(1, 2)
            .reshape(weights.shape))


# Llama 3.1's RoPE scaling, with a short original context so that most pairs of a 16-wide head are scaled
LLAMA3_SCALING = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                  "original_max_position_embeddings": 32}


def tiny_hf(arch: str, tied: bool = False, seed: int = 0, vocab: int | None = None,
            rope_scaling: dict[str, Any] | None = None) -> torch.nn.Module:
    torch.manual_seed(seed)
    vocab = vocab or len(byte_level_vocab()[0])
    common: dict[str, Any] = dict(vocab_size=vocab, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                                  rms_norm_eps=1e-6, tie_word_embeddings=tied, attn_implementation="eager")
    if arch == "qwen3":
        model = transformers.Qwen3ForCausalLM(transformers.Qwen3Config(**common, head_dim=16, rope_theta=1000.0))
    elif arch == "qwen2":
        model = transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**common, rope_theta=1000.0))
    elif arch == "mistral":
        model = transformers.MistralForCausalLM(transformers.MistralConfig(**common, rope_theta=1000.0,
                                                                           sliding_window=None))
    else:
        model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**common, rope_theta=1000.0,
                                                                       rope_scaling=rope_scaling))
    with torch.no_grad():  # norms away from 1 and biases away from 0, so a mix-up shows
        for name, param in model.named_parameters():
            if name.endswith("norm.weight") or name.endswith("layernorm.weight") or name.endswith(".bias"):
                param.copy_(1.0 + 0.3 * torch.randn_like(param) if "norm" in name else 0.2 * torch.randn_like(param))
    return model.eval()


GGUF_NAMES = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
              "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
              "mlp.down_proj": "ffn_down", "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
              "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm",
              "mlp.c_fc": "ffn_up", "mlp.c_proj": "ffn_down"}  # StarCoder2's plain FFN


def gguf_name(hf_name: str) -> str:
    if hf_name == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf_name.startswith("model.norm."):
        return "output_norm." + hf_name.rsplit(".", 1)[1]
    if hf_name == "lm_head.weight":
        return "output.weight"
    _, _, layer, rest = hf_name.split(".", 3)
    module, kind = rest.rsplit(".", 1)
    return f"blk.{layer}.{GGUF_NAMES[module]}.{kind}"


def write_gguf(path: Path, hf: torch.nn.Module, arch: str, qtype: Any, *, pre: str = "qwen2",
               extra: dict[str, Any] | None = None, skip: tuple[str, ...] = (),
               add: dict[str, tuple[np.ndarray, Any]] | None = None,
               spm: dict[str, Any] | None = None) -> dict[str, torch.Tensor]:
    """Write hf as llama.cpp would (permuted Q/K for llama/mistral, 2-D weights in qtype, norms and biases F32).

    spm: SentencePiece tokenizer metadata to write instead of the byte-level BPE.
    Returns the reference state dict for transformers: what the file holds, dequantized by gguf.quants and
    un-permuted by the test's own inverse.
    """
    cfg = hf.config
    writer = gguf.GGUFWriter(str(path), arch)
    rope_theta = cfg.rope_theta if hasattr(cfg, "rope_theta") else cfg.rope_parameters["rope_theta"]
    tokens, merges, types = byte_level_vocab()
    metadata: dict[str, Any] = {
        f"{arch}.block_count": cfg.num_hidden_layers, f"{arch}.context_length": cfg.max_position_embeddings,
        f"{arch}.embedding_length": cfg.hidden_size, f"{arch}.feed_forward_length": cfg.intermediate_size,
        f"{arch}.attention.head_count": cfg.num_attention_heads,
        f"{arch}.attention.head_count_kv": cfg.num_key_value_heads, f"{arch}.rope.freq_base": float(rope_theta),
        f"{arch}.attention.layer_norm_rms_epsilon": float(cfg.rms_norm_eps) if hasattr(cfg, "rms_norm_eps") else None,
        f"{arch}.rope.dimension_count": cfg.hidden_size // cfg.num_attention_heads,
        "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": pre, "tokenizer.ggml.bos_token_id": 1,
        "tokenizer.ggml.eos_token_id": 2, "tokenizer.ggml.add_bos_token": False,
        **(extra or {}),
    }
    if spm is not None:
        del metadata["tokenizer.ggml.pre"], metadata["tokenizer.ggml.add_bos_token"]
        metadata["tokenizer.ggml.model"] = "llama"
        tokens, types = spm["tokenizer.ggml.tokens"], spm["tokenizer.ggml.token_type"]
    for key, value in metadata.items():
        if value is not None:  # None: leave the key out
            writer.add_key_value(key, value, _value_type(value))
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    if spm is not None:
        writer.add_token_scores(spm["tokenizer.ggml.scores"])
    else:
        writer.add_token_merges(merges)
    reference: dict[str, torch.Tensor] = {}
    permuted = arch in ("llama", "mistral", "smollm3")  # llama.cpp's LlamaModel and its subclasses
    for hf_name, tensor in hf.state_dict().items():
        name = gguf_name(hf_name)
        if name in skip or (hf_name == "lm_head.weight" and cfg.tie_word_embeddings):
            continue
        data = tensor.detach().float()
        heads = {"attn_q": cfg.num_attention_heads, "attn_k": cfg.num_key_value_heads}.get(name.split(".")[-2])
        if permuted and heads:
            data = llama_cpp_permute(data, cfg.num_attention_heads,
                                     None if name.split(".")[-2] == "attn_q" else cfg.num_key_value_heads)
        array = data.numpy()
        kind = qtype if array.ndim == 2 else gguf.GGMLQuantizationType.F32
        stored = gguf.quants.quantize(array, kind)
        writer.add_tensor(name, stored, raw_dtype=kind)
        back = torch.from_numpy(np.array(gguf.quants.dequantize(stored, kind), dtype=np.float32)).reshape(array.shape)
        if permuted and heads:
            back = llama_cpp_unpermute(back, heads)
        reference[hf_name] = back
    for name, (array, raw_dtype) in (add or {}).items():  # extra tensors, as stored (raw_dtype None: from the dtype)
        writer.add_tensor(name, array, raw_dtype=raw_dtype)
    return finish(writer, reference, cfg.tie_word_embeddings)


def _value_type(value: Any) -> Any:
    if isinstance(value, bool):
        return gguf.GGUFValueType.BOOL
    if isinstance(value, int):
        return gguf.GGUFValueType.UINT32
    if isinstance(value, float):
        return gguf.GGUFValueType.FLOAT32
    return gguf.GGUFValueType.STRING


GPT2_NAMES = {"attn.c_attn": "attn_qkv", "attn.c_proj": "attn_output", "mlp.c_fc": "ffn_up",
              "mlp.c_proj": "ffn_down", "ln_1": "attn_norm", "ln_2": "ffn_norm"}


def tiny_gpt2(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    config = transformers.GPT2Config(vocab_size=len(byte_level_vocab()[0]), n_positions=64, n_embd=64, n_layer=2,
                                     n_head=4, attn_implementation="eager")
    model = transformers.GPT2LMHeadModel(config)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if ".ln_" in name or name.endswith(".bias"):
                param.add_(0.2 * torch.randn_like(param))
    return model.eval()


def write_gpt2_gguf(path: Path, hf: torch.nn.Module, qtype: Any) -> dict[str, torch.Tensor]:
    """hf as llama.cpp's GPT2Model converter writes it: Conv1D weights transposed to [out, in], lm_head kept
    as output.weight. Returns transformers' state dict as the file holds it (dequantized)."""
    cfg = hf.config
    writer = gguf.GGUFWriter(str(path), "gpt2")
    writer.add_block_count(cfg.n_layer)
    writer.add_context_length(cfg.n_positions)
    writer.add_embedding_length(cfg.n_embd)
    writer.add_feed_forward_length(4 * cfg.n_embd)
    writer.add_head_count(cfg.n_head)
    writer.add_layer_norm_eps(cfg.layer_norm_epsilon)
    tokens, merges, types = byte_level_vocab()
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    reference: dict[str, torch.Tensor] = {}
    for hf_name, tensor in hf.state_dict().items():
        if hf_name.endswith((".attn.bias", ".attn.masked_bias")):
            continue
        conv1d = hf_name.endswith((".c_attn.weight", ".c_proj.weight", ".c_fc.weight"))
        data = tensor.detach().float().T.contiguous() if conv1d else tensor.detach().float()
        if hf_name == "transformer.wte.weight":
            name = "token_embd.weight"
        elif hf_name == "transformer.wpe.weight":
            name = "position_embd.weight"
        elif hf_name == "lm_head.weight":
            name = "output.weight"
        elif hf_name.startswith("transformer.ln_f."):
            name = "output_norm." + hf_name.rsplit(".", 1)[1]
        else:
            _, _, layer, rest = hf_name.split(".", 3)
            module, kind = rest.rsplit(".", 1)
            name = f"blk.{layer}.{GPT2_NAMES[module]}.{kind}"
        array = data.numpy()
        kind_q = qtype if array.ndim == 2 and name != "position_embd.weight" else gguf.GGMLQuantizationType.F32
        stored = gguf.quants.quantize(array, kind_q)
        writer.add_tensor(name, stored, raw_dtype=kind_q)
        back = torch.from_numpy(np.array(gguf.quants.dequantize(stored, kind_q), dtype=np.float32))
        back = back.reshape(array.shape)
        reference[hf_name] = back.T.contiguous() if conv1d else back
    return finish(writer, reference)


def finish(writer: Any, reference: dict[str, torch.Tensor], tied: bool = False) -> dict[str, torch.Tensor]:
    """Write the file (header, metadata, tensors) and close it; a model with tied embeddings reads its output
    matrix from the token embeddings, so the reference holds them as lm_head too."""
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    if tied:
        reference["lm_head.weight"] = reference["model.embed_tokens.weight"]
    return reference
