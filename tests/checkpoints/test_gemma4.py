"""Gemma 4 (text) from Hugging Face directories and GGUF files the tests write: next-token log-probs equal
transformers' within 1e-4 over 100 positions (and the same top token everywhere), on tiny random models with every
feature at once: local layers of head width 16 and global ones of 32 with their own K/V heads, K = V in the global
layers, the last two layers sharing K/V (and their FFN twice as wide), per-layer inputs, layer scalars away from 1,
proportional RoPE on a quarter of the global pairs, a sliding window (7) shorter than the sentence and a soft cap
that bites. What is not implemented is refused by name (the MoE block: tests/checkpoints/test_gemma4_moe.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from checkpoints import CheckpointError, load_checkpoint
from tests.checkpoints.gguf_files import _value_type, byte_level_vocab, finish, gguf, transformers
from tests.checkpoints.test_families import compare, save_hf_directory, tokens

TOL = 1e-4
QTYPES = ["F32", "F16", "Q8_0"]
WINDOW = 7
TYPES = ["sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention",
         "full_attention"]


def tiny_gemma4(seed: int = 0, **changes: Any) -> torch.nn.Module:
    """6 layers (local, global, ...), d_model 64, 4 heads: local heads 16 wide with 2 K/V heads, global heads 32 wide
    with 1 (K = V); layers 4 and 5 attend with layers 2's and 3's K and V and have an FFN of 128, not 64 (rows of
    32: whole Q8_0 blocks)."""
    torch.manual_seed(seed)
    settings: dict[str, Any] = dict(
        vocab_size=len(byte_level_vocab()[0]), vocab_size_per_layer_input=len(byte_level_vocab()[0]),
        hidden_size=64, intermediate_size=64, num_hidden_layers=6, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, global_head_dim=32, num_global_key_value_heads=1, attention_k_eq_v=True, num_kv_shared_layers=2,
        use_double_wide_mlp=True, hidden_size_per_layer_input=32, sliding_window=WINDOW, max_position_embeddings=256,
        final_logit_softcapping=0.5, layer_types=TYPES, rms_norm_eps=1e-6, attn_implementation="eager",
        rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 50.0},
                         "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                            "rope_theta": 1000.0}})
    settings.update(changes)
    model = transformers.Gemma4ForCausalLM(transformers.Gemma4TextConfig(**settings))
    with torch.no_grad():  # gains away from 1 and scalars away from 1, so that a mix-up shows
        for name, param in model.named_parameters():
            if "norm" in name:
                param.copy_(1.0 + 0.3 * torch.randn_like(param))
        for name, buffer in model.named_buffers():
            if name.endswith("layer_scalar"):
                buffer.copy_(0.5 + torch.rand(1))
    return model.eval()


# Gemma 4's MoE block (tests/checkpoints/test_gemma4_moe.py), as llama.cpp's converter names what the map does not
MOE_NAMES = {"router.scale": "ffn_gate_inp.scale", "router.per_expert_scale": "ffn_down_exps.scale",
             "experts.gate_up_proj": "ffn_gate_up_exps.weight", "experts.down_proj": "ffn_down_exps.weight"}


def gguf_name(hf_name: str, names: Any) -> str:
    layer, _, rest = hf_name.removeprefix("model.layers.").partition(".")
    if rest in MOE_NAMES:
        return f"blk.{layer}.{MOE_NAMES[rest]}"
    if hf_name.endswith("layer_scalar"):
        hf_name += ".weight"  # llama.cpp's Gemma4Model.filter_tensors
    base, kind = hf_name.rsplit(".", 1)
    return f"{names.get_name(base)}.{kind}"


def write_gemma4_gguf(path: Path, hf: torch.nn.Module, qtype: Any,
                      extra: dict[str, Any] | None = None) -> dict[str, torch.Tensor]:
    """hf as llama.cpp's Gemma4Model converter writes it: norms as they are (no + 1), per-layer K/V heads and FFN
    widths as arrays, key_length the global head size and key_length_swa the local one, the global layers' RoPE as
    rope_freqs (1 for a turned pair, 1e30 for the others). Returns transformers' state dict as the file holds it."""
    cfg = hf.config
    writer = gguf.GGUFWriter(str(path), "gemma4")
    swa = [kind == "sliding_attention" for kind in cfg.layer_types]
    first_shared = cfg.num_hidden_layers - cfg.num_kv_shared_layers
    full = cfg.rope_parameters["full_attention"]
    glob, loc = (cfg.per_layer_config[cfg.layer_types.index(kind)] for kind in ("full_attention", "sliding_attention"))
    global_dim = glob.head_dim
    metadata: dict[str, Any] = {
        "gemma4.block_count": cfg.num_hidden_layers, "gemma4.context_length": cfg.max_position_embeddings,
        "gemma4.embedding_length": cfg.hidden_size,
        "gemma4.feed_forward_length": [cfg.intermediate_size * (2 if i >= first_shared else 1)
                                       for i in range(cfg.num_hidden_layers)],
        "gemma4.attention.head_count": cfg.num_attention_heads,
        "gemma4.attention.head_count_kv": [loc.num_key_value_heads if s else glob.num_key_value_heads for s in swa],
        "gemma4.attention.layer_norm_rms_epsilon": float(cfg.rms_norm_eps),
        "gemma4.attention.key_length": global_dim, "gemma4.attention.value_length": global_dim,
        "gemma4.attention.key_length_swa": loc.head_dim, "gemma4.attention.value_length_swa": loc.head_dim,
        "gemma4.rope.dimension_count": global_dim, "gemma4.rope.dimension_count_swa": loc.head_dim,
        "gemma4.rope.freq_base": float(full["rope_theta"]),
        "gemma4.rope.freq_base_swa": float(cfg.rope_parameters["sliding_attention"]["rope_theta"]),
        "gemma4.final_logit_softcapping": float(cfg.final_logit_softcapping),
        "gemma4.attention.sliding_window": cfg.sliding_window, "gemma4.attention.sliding_window_pattern": swa,
        "gemma4.attention.shared_kv_layers": cfg.num_kv_shared_layers,
        "gemma4.embedding_length_per_layer_input": cfg.hidden_size_per_layer_input,
        "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "qwen2", "tokenizer.ggml.bos_token_id": 1,
        "tokenizer.ggml.eos_token_id": 2, "tokenizer.ggml.add_bos_token": False,
    }
    if cfg.enable_moe_block:
        metadata |= {"gemma4.expert_count": cfg.num_experts, "gemma4.expert_used_count": cfg.top_k_experts,
                     "gemma4.expert_feed_forward_length": cfg.moe_intermediate_size}
    metadata.update(extra or {})
    for key, value in metadata.items():
        if isinstance(value, list):
            writer.add_array(key, value)
        elif value is not None:
            writer.add_key_value(key, value, _value_type(value))
    vocab, merges, types = byte_level_vocab()
    writer.add_token_list(vocab)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.GEMMA4, cfg.num_hidden_layers)
    reference: dict[str, torch.Tensor] = {}
    for hf_name, tensor in hf.state_dict().items():
        if hf_name == "lm_head.weight" and cfg.tie_word_embeddings:
            continue
        array = tensor.detach().float().numpy()
        kind = qtype if array.ndim >= 2 else gguf.GGMLQuantizationType.F32
        stored = gguf.quants.quantize(array, kind)
        writer.add_tensor(gguf_name(hf_name, names), stored, raw_dtype=kind)
        back = np.array(gguf.quants.dequantize(stored, kind), dtype=np.float32)
        reference[hf_name] = torch.from_numpy(back).reshape(array.shape)
    turned = int(global_dim * full["partial_rotary_factor"] / 2)
    freqs = np.array([1.0] * turned + [1e30] * (global_dim // 2 - turned), dtype=np.float32)
    writer.add_tensor("rope_freqs.weight", freqs, raw_dtype=gguf.GGMLQuantizationType.F32)
    return finish(writer, reference, cfg.tie_word_embeddings)


def check_shapes(cfg: Any) -> None:
    """The loaded config has every feature the tiny model has."""
    assert (cfg.d_head_of(0), cfg.d_head_of(1), cfg.kv_heads_of(0), cfg.kv_heads_of(1)) == (16, 32, 2, 1)
    assert cfg.kv_source == (0, 1, 2, 3, 2, 3) and cfg.k_is_v(1) and not cfg.k_is_v(0)
    assert [cfg.mlp_width_of(i) for i in range(6)] == [64, 64, 64, 64, 128, 128]
    assert cfg.per_layer_input == 32 and cfg.layer_scalar and cfg.v_norm and cfg.score_scale_dim == 1.0
    assert cfg.window_of(0) == WINDOW and cfg.window_of(1) is None and cfg.logit_softcap == 0.5
    assert cfg.rope_of(1)[1][:4] == (1.0,) * 4 and min(cfg.rope_of(1)[1][4:]) >= 1e30  # 4 of 16 pairs turn


def test_gemma4_directory_matches_transformers(tmp_path: Path) -> None:
    hf = tiny_gemma4()
    save_hf_directory(hf, tmp_path)
    loaded = load_checkpoint(tmp_path)
    check_shapes(loaded.model.cfg)
    toks = tokens(loaded.model.cfg.vocab_size)
    assert compare(loaded.model, hf, toks) <= TOL
    _, trace = loaded.model.run_with_trace(toks)
    assert trace["hook_pli"].shape == (1, 100, 6, 32) and trace["blocks.5.hook_pli_out"].shape == (1, 100, 64)
    assert "blocks.4.attn.hook_k_shared" in trace and "blocks.4.attn.hook_k" not in trace
    assert torch.equal(trace["blocks.5.attn.hook_k_shared"], trace["blocks.3.attn.hook_rot_k"])
    assert torch.equal(trace["blocks.1.attn.hook_v"], trace["blocks.1.attn.hook_k"])  # K = V: the same projection
    assert trace["hook_logits_raw"].abs().max() > 0.5 > trace["hook_logits"].abs().max()  # the cap bites


@pytest.mark.parametrize("changes", [
    # no per-layer inputs (Gemma 4 31B): with no shared layers either, as transformers' own pass needs
    {"attention_k_eq_v": False}, {"num_kv_shared_layers": 0},
    {"hidden_size_per_layer_input": 0, "num_kv_shared_layers": 0},
    {"use_double_wide_mlp": False}, {"global_head_dim": 16}])
def test_each_feature_is_read_from_the_config(tmp_path: Path, changes: dict[str, Any]) -> None:
    """Each feature switched off (or the global heads as narrow as the local ones) loads, matches transformers,
    and changes the config: the parity above is no accident of one path."""
    hf = tiny_gemma4(**changes)
    save_hf_directory(hf, tmp_path)
    loaded = load_checkpoint(tmp_path)
    assert compare(loaded.model, hf, tokens(loaded.model.cfg.vocab_size)) <= TOL
    with pytest.raises(AssertionError):
        check_shapes(loaded.model.cfg)


@pytest.mark.parametrize("qtype", QTYPES)
def test_gemma4_gguf_matches_transformers_on_the_same_weights(tmp_path: Path, qtype: str) -> None:
    hf = tiny_gemma4()
    path = tmp_path / f"gemma4-{qtype}.gguf"
    held = write_gemma4_gguf(path, hf, gguf.GGMLQuantizationType[qtype])
    reference = tiny_gemma4()
    reference.load_state_dict(held)  # transformers' model with the weights as the file holds them
    loaded = load_checkpoint(path)
    assert loaded.meta["gguf_architecture"] == "gemma4"
    check_shapes(loaded.model.cfg)
    toks = tokens(loaded.model.cfg.vocab_size)
    assert compare(loaded.model, reference, toks) <= TOL
    if qtype == "F32":  # the file's model is the directory's model
        assert compare(loaded.model, hf, toks) <= TOL


def test_decoding_with_a_kv_cache_equals_the_full_pass(tmp_path: Path) -> None:
    """Shared layers read their source's cached K and V: token by token gives the full pass's logits."""
    from model.kv_cache import KVCache

    hf = tiny_gemma4()
    save_hf_directory(hf, tmp_path)
    model = load_checkpoint(tmp_path).model
    toks = tokens(model.cfg.vocab_size)[:, :20]
    cache = KVCache()
    with torch.inference_mode():
        full = model(toks)
        steps = torch.cat([model(toks[:, i : i + 1], cache=cache) for i in range(20)], dim=1)
    assert (steps - full).abs().max().item() <= 1e-4
    assert len([entry for entry in cache.self_attn if entry.k is not None]) == 4  # layers 4, 5 store nothing


def test_a_pass_resumed_past_a_source_layer_is_refused(tmp_path: Path) -> None:
    hf = tiny_gemma4()
    save_hf_directory(hf, tmp_path)
    model = load_checkpoint(tmp_path).model
    with pytest.raises(ValueError, match="per-layer input embedding"):
        model.logits_from(torch.zeros(1, 3, 64), 2)


# ---------------------------------------------------------------- refusals, by name


@pytest.mark.parametrize(("changes", "named"), [
    ({"enable_moe_block": True, "num_experts": 4, "top_k_experts": None, "moe_intermediate_size": 16},
     "top_k_experts = None"),  # the MoE block itself: tests/checkpoints/test_gemma4_moe.py
    ({"attention_bias": True}, "attention_bias = True is not implemented"),
    ({"use_bidirectional_attention": "all"}, "use_bidirectional_attention = 'all' is not implemented"),
    ({"vocab_size_per_layer_input": 100}, "vocab_size_per_layer_input = 100"),
    ({"hidden_activation": "gelu"}, "hidden_activation = 'gelu'"),
    ({"rope_parameters": {"full_attention": {"rope_type": "yarn", "factor": 4.0, "rope_theta": 1e6},
                          "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}},
     "rope_parameters.full_attention.rope_type = 'yarn'"),
    ({"rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 1e6},
                          "sliding_attention": {"rope_type": "default", "rope_theta": 1e4,
                                                "partial_rotary_factor": 0.5}}},
     "RoPE scaling on the local layers"),
    ({"per_layer_config": {"0": {"head_dim": 32}}}, "per_layer_config = "),
    ({"num_kv_shared_layers": 6}, "num_kv_shared_layers = 6"),
    ({"layer_types": ["chunked_attention"] * 6}, "layer_types = "),
])
def test_hf_gemma4_fields_not_implemented_are_refused(changes: dict[str, Any], named: str) -> None:
    from checkpoints.hf import convert_hf

    hf = tiny_gemma4()
    config = {**hf.config.to_dict(), **changes}
    with pytest.raises(CheckpointError, match=re.escape(named)):
        convert_hf(config, hf.state_dict())


@pytest.mark.parametrize(("extra", "named"), [
    ({"gemma4.expert_count": 8}, "the metadata has no gemma4.expert_used_count"),  # an MoE block half described
    ({"gemma4.expert_feed_forward_length": 16}, "expert_feed_forward_length = 16 (mixture of experts)"),
    ({"gemma4.rope.dimension_count_swa": 8}, "rope.dimension_count_swa = 8"),
    ({"gemma4.attention.head_count_kv": [2, 1, 2, 1, 1, 1]}, "K/V heads that differ between layers of one kind"),
    ({"gemma4.attention.sliding_window_pattern": None}, "sliding_window_pattern"),
    ({"gemma4.attention.shared_kv_layers": 6}, "num_kv_shared_layers = 6 (layers sharing K/V with no earlier"),
])
def test_gguf_gemma4_keys_not_implemented_are_refused(tmp_path: Path, extra: dict[str, Any], named: str) -> None:
    path = tmp_path / "refused.gguf"
    write_gemma4_gguf(path, tiny_gemma4(), gguf.GGMLQuantizationType.F32, extra=extra)
    with pytest.raises(CheckpointError, match=re.escape(named)):
        load_checkpoint(path)
