"""Qwen3.5 (qwen35: Hugging Face qwen3_5_text, GGUF qwen35) from directories and GGUF files the tests write: next-token
log-probs equal transformers' within 1e-4 over 100 positions (and the same top token everywhere) on a tiny random
hybrid whose shapes exercise every feature: three gated DeltaNet layers and one gated full-attention layer, a
convolution of 4 tokens, 100 tokens (two chunks of transformers' chunked delta rule, 64 each), key heads of 16,
value heads of 24 (two per key head) and attention heads of 32 with RoPE on 8 of them. Fields and keys not
implemented are refused by name."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from checkpoints import CheckpointError, load_checkpoint
from model.generate import generate
from tests.checkpoints.gguf_files import _value_type, byte_level_vocab, finish, gguf, transformers
from tests.checkpoints.test_families import compare, save_hf_directory, tokens

TOL = 1e-4
QTYPES = ["F32", "F16", "Q8_0"]


def tiny_qwen35(seed: int = 0, **changes: Any) -> torch.nn.Module:
    """4 layers (DeltaNet × 3, then full attention), gains away from 1 so that a 1 + w mix-up shows."""
    torch.manual_seed(seed)
    fields: dict[str, Any] = dict(
        vocab_size=len(byte_level_vocab()[0]), hidden_size=64, intermediate_size=96, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, linear_key_head_dim=16, linear_value_head_dim=24,
        linear_num_key_heads=2, linear_num_value_heads=4, linear_conv_kernel_dim=4, max_position_embeddings=256,
        rms_norm_eps=1e-6, attn_implementation="eager",
        rope_parameters={"rope_type": "default", "rope_theta": 1000.0, "partial_rotary_factor": 0.25})
    fields.update(changes)
    model = transformers.Qwen3_5ForCausalLM(transformers.Qwen3_5TextConfig(**fields))
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "norm" in name:  # the gated norm's gain is w itself (ones), the others' 1 + w (zeros)
                param.copy_(0.3 * torch.randn_like(param) + (1.0 if "linear_attn.norm" in name else 0.0))
    return model.eval()


# ---------------------------------------------------------------- Hugging Face directories


def test_qwen35_directory_matches_transformers(tmp_path: Path) -> None:
    hf = tiny_qwen35()
    save_hf_directory(hf, tmp_path)
    loaded = load_checkpoint(tmp_path)
    cfg = loaded.model.cfg
    assert cfg.deltanet_layers == (0, 1, 2) and cfg.attn_output_gate and cfg.qk_norm
    assert (cfg.d_head, cfg.rotary_dims, cfg.deltanet_key_dim, cfg.deltanet_value_dim, cfg.deltanet_conv) == \
        (32, 8, 16, 24, 4)
    toks = tokens(cfg.vocab_size)
    assert toks.shape[1] == 100  # past one chunk (64) of transformers' chunked delta rule
    assert compare(loaded.model, hf, toks) <= TOL
    _, trace = loaded.model.run_with_trace(toks)
    assert trace["blocks.0.deltanet.hook_state"].shape == (1, 4, 24, 16)
    assert trace["blocks.3.attn.hook_out_gate"].shape == (1, 100, 4, 32)
    assert "blocks.0.attn.hook_pattern" not in trace and "blocks.3.attn.hook_pattern" in trace
    # the first token writes a whole new state; later ones change it by a share from 0 to 2 of its size
    change = trace["blocks.0.deltanet.hook_state_change"][0]
    assert torch.allclose(change[0], torch.ones(4)) and bool(((change > 0) & (change <= 2)).all())


def test_the_layer_types_and_the_convolution_matter() -> None:
    """The same weights with other layer types, or a convolution that reads only the current token, give other
    numbers: the parity test can fail."""
    hf = tiny_qwen35()
    toks = tokens(hf.config.vocab_size)
    with torch.inference_mode():
        want = hf(toks).logits
        other = tiny_qwen35(layer_types=["linear_attention", "linear_attention", "full_attention", "linear_attention"])
        other.load_state_dict(hf.state_dict(), strict=False)
        assert (other(toks).logits - want).abs().max().item() > 10 * TOL
        short = tiny_qwen35()
        short.load_state_dict(hf.state_dict())
        for layer in short.model.layers[:3]:
            layer.linear_attn.conv1d.weight[..., :-1] = 0.0
        assert (short(toks).logits - want).abs().max().item() > 10 * TOL


def test_cached_decoding_equals_the_full_pass(tmp_path: Path) -> None:
    """Decoding with the cache (DeltaNet: the state and the convolution's last inputs) continues as a full pass."""
    save_hf_directory(tiny_qwen35(), tmp_path)
    model = load_checkpoint(tmp_path).model
    prompt = tokens(model.cfg.vocab_size)[0, :70].tolist()
    cached = generate(model, prompt, max_new_tokens=12, use_cache=True)
    assert len(cached) == 12 and cached == generate(model, prompt, max_new_tokens=12, use_cache=False)


@pytest.mark.parametrize(("field", "value", "named"), [
    ("layer_types", ["linear_attention", "sliding_attention", "linear_attention", "full_attention"], "layer_types"),
    ("mlp_only_layers", [1], "mlp_only_layers"),
    ("hidden_act", "tanh", "hidden_act"),
])
def test_fields_not_implemented_are_refused_by_name(tmp_path: Path, field: str, value: Any, named: str) -> None:
    save_hf_directory(tiny_qwen35(), tmp_path)
    config = tmp_path / "config.json"
    import json

    data = json.loads(config.read_text())
    data[field] = value
    config.write_text(json.dumps(data))
    with pytest.raises(CheckpointError, match=re.escape(named)):
        load_checkpoint(tmp_path)


# ---------------------------------------------------------------- GGUF files

NAMES = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
         "self_attn.o_proj": "attn_output", "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm",
         "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
         "input_layernorm": "attn_norm", "post_attention_layernorm": "post_attention_norm",
         "linear_attn.in_proj_qkv": "attn_qkv", "linear_attn.in_proj_z": "attn_gate",
         "linear_attn.in_proj_a": "ssm_alpha", "linear_attn.in_proj_b": "ssm_beta", "linear_attn.conv1d": "ssm_conv1d",
         "linear_attn.norm": "ssm_norm", "linear_attn.out_proj": "ssm_out"}


def tiled(x: torch.Tensor, key_heads: int, heads: int, dim: int = 0, back: bool = False) -> torch.Tensor:
    """llama.cpp's value-head reorder along dim: grouped by key head (key · r + i) -> tiled (i · key_heads + key);
    back: its inverse (the test's own, not the loader's)."""
    moved = x.movedim(dim, 0)
    rest, r = moved.shape[1:], heads // key_heads
    per = moved.reshape(r, key_heads, -1, *rest) if back else moved.reshape(key_heads, r, -1, *rest)
    return per.transpose(0, 1).reshape(moved.shape).movedim(0, dim)


# Qwen3.5-MoE's FFN (tests/checkpoints/test_qwen35_moe.py), as llama.cpp's Qwen3_5MoeTextModel converter names it
MOE_NAMES = {"mlp.gate": "ffn_gate_inp", "mlp.experts.down_proj": "ffn_down_exps",
             "mlp.shared_expert.gate_proj": "ffn_gate_shexp", "mlp.shared_expert.up_proj": "ffn_up_shexp",
             "mlp.shared_expert.down_proj": "ffn_down_shexp", "mlp.shared_expert_gate": "ffn_gate_inp_shexp"}


def write_qwen35_gguf(path: Path, hf: torch.nn.Module, qtype: Any, extra: dict[str, Any] | None = None,
                      kv_per_layer: list[int] | None = None, arch: str = "qwen35",
                      merged_experts: bool = False) -> dict[str, torch.Tensor]:
    """hf as llama.cpp's Qwen3_5TextModel converter writes it (zero-centred norms + 1, ssm_a = −exp(A_log), dt_bias as
    ssm_dt.bias, the convolution squeezed, value heads tiled); weights of 2 dimensions or more in qtype, the
    convolution F32. arch "qwen35moe": Qwen3_5MoeTextModel's, the experts as 3-D tensors (gate and up apart, or
    merged), the shared expert's and its gate's own. Returns transformers' state dict as the file holds it
    (dequantized, the reorder undone by the test's own inverse)."""
    cfg = hf.config
    key_heads, heads, d_v = cfg.linear_num_key_heads, cfg.linear_num_value_heads, cfg.linear_value_head_dim
    key_width = key_heads * cfg.linear_key_head_dim
    writer = gguf.GGUFWriter(str(path), arch)
    tokens_, merges, types = byte_level_vocab()
    moe = {} if arch == "qwen35" else {
        f"{arch}.expert_count": cfg.num_experts, f"{arch}.expert_used_count": cfg.num_experts_per_tok,
        f"{arch}.expert_feed_forward_length": cfg.moe_intermediate_size,
        f"{arch}.expert_shared_feed_forward_length": cfg.shared_expert_intermediate_size}
    metadata: dict[str, Any] = {**moe,
        f"{arch}.block_count": cfg.num_hidden_layers, f"{arch}.context_length": cfg.max_position_embeddings,
        f"{arch}.embedding_length": cfg.hidden_size,
        f"{arch}.feed_forward_length": None if moe else cfg.intermediate_size,
        f"{arch}.attention.head_count": cfg.num_attention_heads,
        f"{arch}.attention.head_count_kv": cfg.num_key_value_heads,
        f"{arch}.attention.key_length": cfg.head_dim, f"{arch}.attention.value_length": cfg.head_dim,
        f"{arch}.attention.layer_norm_rms_epsilon": float(cfg.rms_norm_eps),
        f"{arch}.rope.freq_base": float(cfg.rope_parameters["rope_theta"]),
        f"{arch}.rope.dimension_count": int(cfg.head_dim * cfg.rope_parameters["partial_rotary_factor"]),
        f"{arch}.full_attention_interval": 4, f"{arch}.ssm.conv_kernel": cfg.linear_conv_kernel_dim,
        f"{arch}.ssm.state_size": cfg.linear_key_head_dim, f"{arch}.ssm.group_count": key_heads,
        f"{arch}.ssm.time_step_rank": heads, f"{arch}.ssm.inner_size": heads * d_v,
        "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "qwen2", "tokenizer.ggml.bos_token_id": 1,
        "tokenizer.ggml.eos_token_id": 2, "tokenizer.ggml.add_bos_token": False,
    }
    metadata.update(extra or {})
    for key, value in metadata.items():
        if value is not None:
            writer.add_key_value(key, value, _value_type(value))
    writer.add_array(f"{arch}.rope.dimension_sections", [2, 1, 1, 0])
    if kv_per_layer is not None:  # one K/V head count per layer, as some converters write it
        writer.add_array(f"{arch}.attention.head_count_kv", kv_per_layer)
    writer.add_token_list(tokens_)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    reference: dict[str, torch.Tensor] = {}

    def add(name: str, data: torch.Tensor) -> torch.Tensor:
        array = data.numpy()
        kind = qtype if array.ndim >= 2 and "ssm_conv1d" not in name else gguf.GGMLQuantizationType.F32
        stored = gguf.quants.quantize(array, kind)
        writer.add_tensor(name, stored, raw_dtype=kind)
        return torch.from_numpy(np.array(gguf.quants.dequantize(stored, kind), dtype=np.float32)).reshape(array.shape)

    for hf_name, tensor in hf.state_dict().items():
        data = tensor.detach().float()
        if hf_name.endswith("mlp.experts.gate_up_proj"):  # [expert, 2·width, d_model]: gate rows, then up rows
            blk, width = f"blk.{hf_name.split('.')[2]}.", data.shape[1] // 2
            reference[hf_name] = add(blk + "ffn_gate_up_exps.weight", data) if merged_experts else torch.cat(
                [add(blk + "ffn_gate_exps.weight", data[:, :width]), add(blk + "ffn_up_exps.weight", data[:, width:])],
                dim=1)
            continue
        moe_name = next((v for k, v in MOE_NAMES.items() if hf_name.split(".", 3)[-1] in (k, k + ".weight")), None)
        if moe_name is not None:
            reference[hf_name] = add(f"blk.{hf_name.split('.')[2]}.{moe_name}.weight", data)
            continue
        if hf_name == "model.embed_tokens.weight":
            name = "token_embd.weight"
        elif hf_name == "model.norm.weight":
            name = "output_norm.weight"
        elif hf_name == "lm_head.weight":
            name = "output.weight"
        else:
            _, _, layer, rest = hf_name.split(".", 3)
            module, kind = rest.rsplit(".", 1)
            own = {"linear_attn.A_log": "ssm_a", "linear_attn.dt_bias": "ssm_dt.bias"}
            name = f"blk.{layer}.{own[rest]}" if rest in own else f"blk.{layer}.{NAMES[module]}.{kind}"
        if name.endswith("norm.weight") and "ssm_norm" not in name:
            data = data + 1  # the zero-centred RMSNorm's gain
        if name.endswith("ssm_a"):
            data = -data.exp()
        if name.endswith("ssm_conv1d.weight"):
            data = data[:, 0, :]
        if any(part in name for part in ("attn_qkv", "ssm_conv1d")):
            data = torch.cat((data[:2 * key_width], tiled(data[2 * key_width:], key_heads, heads)))
        elif any(part in name for part in ("attn_gate", "ssm_alpha", "ssm_beta", "ssm_a", "ssm_dt")):
            data = tiled(data, key_heads, heads)
        elif "ssm_out" in name:
            data = tiled(data, key_heads, heads, dim=1)
        reference[hf_name] = untransformed(add(name, data), name, key_heads, heads, key_width, tensor.shape)
    return finish(writer, reference)


def untransformed(back: torch.Tensor, name: str, key_heads: int, heads: int, key_width: int,
                  shape: torch.Size) -> torch.Tensor:
    """The test's own inverse of what write_qwen35_gguf did to one tensor."""
    if any(part in name for part in ("attn_qkv", "ssm_conv1d")):
        back = torch.cat((back[:2 * key_width], tiled(back[2 * key_width:], key_heads, heads, back=True)))
    elif any(part in name for part in ("attn_gate", "ssm_alpha", "ssm_beta", "ssm_a", "ssm_dt")):
        back = tiled(back, key_heads, heads, back=True)
    elif "ssm_out" in name:
        back = tiled(back, key_heads, heads, dim=1, back=True)
    if name.endswith("ssm_a"):
        back = (-back).log()
    if name.endswith("norm.weight") and "ssm_norm" not in name:
        back = back - 1
    return back.reshape(shape)


@pytest.mark.parametrize("qtype", QTYPES)
def test_qwen35_gguf_matches_transformers_on_the_same_weights(tmp_path: Path, qtype: str) -> None:
    hf = tiny_qwen35()
    path = tmp_path / f"qwen35-{qtype}.gguf"
    reference_state = write_qwen35_gguf(path, hf, gguf.GGMLQuantizationType[qtype])
    reference = tiny_qwen35()
    reference.load_state_dict(reference_state)
    loaded = load_checkpoint(path)
    cfg = loaded.model.cfg
    assert loaded.meta["gguf_architecture"] == "qwen35"
    assert cfg.deltanet_layers == (0, 1, 2) and (cfg.rotary_dims, cfg.deltanet_value_heads) == (8, 4)
    toks = tokens(cfg.vocab_size)
    assert compare(loaded.model, reference.eval(), toks) <= TOL
    if qtype == "F32":  # the file is the model: the reorder undone gives transformers' weights themselves
        assert compare(loaded.model, hf, toks) <= TOL


def test_a_kv_head_count_per_layer_is_read(tmp_path: Path) -> None:
    """attention.head_count_kv as one count per layer (0 for the recurrent ones) reads as the attention layers'."""
    hf = tiny_qwen35()
    path = tmp_path / "qwen35.gguf"
    reference_state = write_qwen35_gguf(path, hf, gguf.GGMLQuantizationType.F32,
                                        extra={"qwen35.attention.head_count_kv": None}, kv_per_layer=[0, 0, 0, 2])
    reference = tiny_qwen35()
    reference.load_state_dict(reference_state)
    loaded = load_checkpoint(path)
    assert loaded.model.cfg.kv_heads == 2
    assert compare(loaded.model, reference.eval(), tokens(loaded.model.cfg.vocab_size)) <= TOL


def test_the_value_head_reorder_matters(tmp_path: Path) -> None:
    """Read without undoing llama.cpp's reorder, the value heads meet the wrong key heads: other numbers."""
    hf = tiny_qwen35()
    path = tmp_path / "qwen35.gguf"
    write_qwen35_gguf(path, hf, gguf.GGMLQuantizationType.F32)
    from checkpoints.families import qwen35

    loaded = load_checkpoint(path)
    toks = tokens(loaded.model.cfg.vocab_size)
    weight = loaded.model.stack.blocks[0].deltanet.W_z.weight
    with torch.no_grad():
        weight.copy_(qwen35.untile(weight.clone(), 2, 4))  # tiled once more: not transformers' order
        assert compare_quietly(loaded.model, hf, toks) > 10 * TOL


def compare_quietly(ours: torch.nn.Module, reference: torch.nn.Module, toks: torch.Tensor) -> float:
    with torch.inference_mode():
        return (ours(toks).log_softmax(-1) - reference(toks).logits.log_softmax(-1)).abs().max().item()


@pytest.mark.parametrize(("key", "value", "named"), [
    ("qwen35.ssm.dt_b_c_rms", True, "qwen35.ssm.dt_b_c_rms"),
    ("qwen35.attention.value_length", 16, "attention.value_length"),
    ("qwen35.expert_count", 4, "qwen35.expert_count"),
])
def test_gguf_keys_not_implemented_are_refused_by_name(tmp_path: Path, key: str, value: Any, named: str) -> None:
    path = tmp_path / "qwen35.gguf"
    write_qwen35_gguf(path, tiny_qwen35(), gguf.GGMLQuantizationType.F32, extra={key: value})
    with pytest.raises(CheckpointError, match=re.escape(named)):
        load_checkpoint(path)


@pytest.mark.parametrize("qtype", ["F16", "Q8_0"])
def test_qwen35_kept_in_the_files_precision_gives_the_float32_numbers(tmp_path: Path, qtype: str) -> None:
    """A float32 budget of 0: the reordered DeltaNet rows and the split query / gate stay stored weights."""
    from model.stored_weights import StoredWeight
    from tests.checkpoints.test_file_precision import assert_same_pass, both

    path = tmp_path / "qwen35.gguf"
    write_qwen35_gguf(path, tiny_qwen35(), gguf.GGMLQuantizationType[qtype])
    eager, stored = both(path)
    blocks = stored.stack.blocks
    assert isinstance(blocks[0].deltanet.W_qkv.weight, StoredWeight)
    assert isinstance(blocks[0].deltanet.W_z.weight, StoredWeight)
    assert isinstance(blocks[3].attn.W_G.weight, StoredWeight)
    assert_same_pass(eager, stored)


def test_the_published_wrapper_qwen35_vl_reads_its_text_model(tmp_path: Path) -> None:
    """qwen35_vl: a Qwen3_5ForConditionalGeneration directory (model_type qwen3_5, as Qwen/Qwen3.5-0.8B is
    published): its text model's next-token log-probs equal transformers' on text, the vision tower left out; the
    fields released text configs carry are read, inert or refused by name."""
    import json

    text = tiny_qwen35().config.to_dict()
    torch.manual_seed(0)
    config = transformers.Qwen3_5Config(text_config=text, vision_config=dict(
        depth=1, hidden_size=32, num_heads=2, intermediate_size=32, out_hidden_size=64, patch_size=4,
        temporal_patch_size=2, spatial_merge_size=2))
    hf = transformers.Qwen3_5ForConditionalGeneration(config).eval()
    with torch.no_grad():
        for name, param in hf.named_parameters():
            if "language_model" in name and "norm" in name:
                param.copy_(0.3 * torch.randn_like(param) + (1.0 if "linear_attn.norm" in name else 0.0))
    save_hf_directory(hf, tmp_path)
    written = json.loads((tmp_path / "config.json").read_text())
    assert written["model_type"] == "qwen3_5" and "vision_config" in written
    written["text_config"] |= {"attn_output_gate": True, "mtp_num_hidden_layers": 1, "mlp_only_layers": []}
    (tmp_path / "config.json").write_text(json.dumps(written))
    loaded = load_checkpoint(tmp_path)
    assert loaded.meta["model_type"] == "qwen3_5" and loaded.model.cfg.deltanet_layers == (0, 1, 2)
    assert compare(loaded.model, hf, tokens(loaded.model.cfg.vocab_size)) <= TOL
    written["text_config"]["attn_output_gate"] = False
    (tmp_path / "config.json").write_text(json.dumps(written))
    with pytest.raises(CheckpointError, match=re.escape("text_config): config field attn_output_gate = False")):
        load_checkpoint(tmp_path)
