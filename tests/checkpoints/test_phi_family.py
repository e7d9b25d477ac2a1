"""Phi-3 / Phi-4-mini (transformers' Phi3ForCausalLM, llama.cpp's phi3) from Hugging Face directories and GGUF files
the tests write: fused Q/K/V and gate/up split at load, partial rotary, longrope on both sides of its switch, the
sliding window; parity with transformers on the same (dequantized) weights, and a named refusal per field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from checkpoints import load_checkpoint
from checkpoints.base import CheckpointError
from checkpoints.hf import convert_hf
from tests.checkpoints.gguf_files import _value_type, byte_level_vocab, finish, gguf, transformers
from tests.checkpoints.test_families import save_hf_directory

TOL = 1e-4
ORIGINAL = 16  # a tiny original context: longrope switches to its long factors past 16 tokens
LENGTHS = (11, 16, 17, 29)  # shorter than, equal to, one past and far past the original context
D_HEAD = 16


def tiny_phi3(partial: float = 1.0, longrope: bool = False, window: int | None = None, tied: bool = False,
              seed: int = 0) -> Any:
    """A random Phi3ForCausalLM, 2 layers × 64, 4 query / 2 K/V heads of 16, norms away from 1."""
    torch.manual_seed(seed)
    rope: dict[str, Any] = {"rope_type": "default", "rope_theta": 1000.0, "partial_rotary_factor": partial}
    if longrope:
        pairs = int(D_HEAD * partial) // 2
        g = torch.Generator().manual_seed(seed + 5)
        rope.update(rope_type="longrope", short_factor=(1 + torch.rand(pairs, generator=g)).tolist(),
                    long_factor=(2 + 8 * torch.rand(pairs, generator=g)).tolist())
    config = transformers.Phi3Config(
        vocab_size=len(byte_level_vocab()[0]), hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
        original_max_position_embeddings=ORIGINAL, rope_parameters=rope, sliding_window=window,
        attn_implementation="eager", tie_word_embeddings=tied, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    model = transformers.Phi3ForCausalLM(config)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "norm" in name:
                param.copy_(1.0 + 0.3 * torch.randn_like(param))
    return model.eval()


def compare(ours: torch.nn.Module, hf: Any, lengths: tuple[int, ...] = LENGTHS) -> float:
    """The largest next-token log-prob difference over sequences of these lengths; greedy tokens equal."""
    worst = 0.0
    vocab = hf.config.vocab_size
    for length in lengths:
        toks = torch.randint(0, vocab, (1, length), generator=torch.Generator().manual_seed(length))
        with torch.inference_mode():
            got, want = ours(toks).log_softmax(-1), hf(toks).logits.log_softmax(-1)
        assert torch.equal(got.argmax(-1), want.argmax(-1))
        worst = max(worst, (got - want).abs().max().item())
    return worst


# ---------------------------------------------------------------- Hugging Face directories


@pytest.mark.parametrize(("partial", "longrope", "window"),
                         [(1.0, False, None), (0.75, False, None), (1.0, True, None), (0.75, True, 7)],
                         ids=["plain", "partial", "longrope", "partial-longrope-window"])
def test_directory_matches_transformers(tmp_path: Path, partial: float, longrope: bool, window: int | None) -> None:
    hf = tiny_phi3(partial, longrope, window)
    save_hf_directory(hf, tmp_path)
    loaded = load_checkpoint(tmp_path)
    cfg = loaded.model.cfg
    assert cfg.rotary_dims == int(D_HEAD * partial) and cfg.sliding_window == window
    assert (cfg.rope_original_context == ORIGINAL) == longrope
    if longrope:  # transformers' default: √(1 + ln(max / original) / ln original)
        assert cfg.rope_attention_factor == pytest.approx((1 + np.log(128 / ORIGINAL) / np.log(ORIGINAL)) ** 0.5)
    assert compare(loaded.model, hf) <= TOL


def test_longrope_switch_changes_the_numbers() -> None:
    """Past the original context the long factors really are used (and not before): dropping them changes the
    long sequences only."""
    hf = tiny_phi3(0.75, longrope=True)
    cfg, state = convert_hf(hf.config.to_dict(), {k: v.clone() for k, v in hf.state_dict().items()})
    from checkpoints import build_model

    both = build_model(cfg, dict(state))
    short_only = build_model(cfg.replace(rope_long_freq_factors=None, rope_original_context=None), dict(state))
    for length, same in ((ORIGINAL, True), (ORIGINAL + 1, False)):
        toks = torch.randint(0, cfg.vocab_size, (1, length), generator=torch.Generator().manual_seed(3))
        with torch.inference_mode():
            gap = (both(toks) - short_only(toks)).abs().max().item()
        assert (gap == 0.0) == same


def test_decoding_across_the_switch_matches_a_full_pass() -> None:
    """The one decoding loop (model.generate) drops its KV cache when longrope switches sets, as transformers'
    Phi-3 does: every position of every layer changes. Greedy decoding with and without the cache agree, and a
    forward pass that would cross the switch from a cache is refused."""
    from checkpoints import build_model
    from model.generate import generate
    from model.kv_cache import KVCache

    hf = tiny_phi3(0.75, longrope=True)
    cfg, state = convert_hf(hf.config.to_dict(), {k: v.clone() for k, v in hf.state_dict().items()})
    model = build_model(cfg, state)
    prompt = torch.randint(0, cfg.vocab_size, (ORIGINAL - 3,), generator=torch.Generator().manual_seed(4)).tolist()
    fed: list[int] = []
    cached = generate(model, prompt, max_new_tokens=8, temperature=0.0, on_step=lambda step: fed.append(step.fed))
    assert cached == generate(model, prompt, max_new_tokens=8, temperature=0.0, use_cache=False)
    assert fed[:6] == [ORIGINAL - 3, 1, 1, 1, ORIGINAL + 1, 1]  # the step past the switch reads everything again
    sequence = torch.tensor([prompt + cached])
    cache = KVCache()
    with torch.inference_mode():
        model(sequence[:, :ORIGINAL], cache=cache)
        with pytest.raises(ValueError, match="longrope"):
            model(sequence[:, ORIGINAL : ORIGINAL + 1], cache=cache)


def test_partial_rotary_leaves_the_last_dimensions_alone() -> None:
    """The traced RoPE stage: the first rope_dims of each head turn, the rest are q and k as projected."""
    hf = tiny_phi3(0.75)
    cfg, state = convert_hf(hf.config.to_dict(), {k: v.clone() for k, v in hf.state_dict().items()})
    from checkpoints import build_model

    model = build_model(cfg, state)
    _, trace = model.run_with_trace(torch.arange(3, 15)[None])
    q, rot = trace["blocks.0.attn.hook_q"], trace["blocks.0.attn.hook_rot_q"]
    assert torch.equal(q[..., 12:], rot[..., 12:])
    assert (q[:, 1:, :, :12] - rot[:, 1:, :, :12]).abs().max() > 1e-3


# ---------------------------------------------------------------- GGUF files


def write_phi3_gguf(path: Path, hf: Any, qtype: Any, extra: dict[str, Any] | None = None,
                    skip: tuple[str, ...] = ()) -> dict[str, torch.Tensor]:
    """hf as llama.cpp's Phi3MiniModel converter writes it: qkv_proj as attn_qkv, gate_up_proj as ffn_up (gate rows
    then up rows), rope.dimension_count, sliding_window (0: none), and for longrope rope_factors_short / _long with
    rope.scaling.attn_factor and original_context_length. Returns transformers' state dict as the file holds it."""
    cfg = hf.config
    rope = cfg.rope_parameters
    writer = gguf.GGUFWriter(str(path), "phi3")
    tokens, merges, types = byte_level_vocab()
    rope_dims = int(cfg.hidden_size * rope.get("partial_rotary_factor", 1.0)) // cfg.num_attention_heads
    metadata: dict[str, Any] = {
        "phi3.block_count": cfg.num_hidden_layers, "phi3.context_length": cfg.max_position_embeddings,
        "phi3.rope.scaling.original_context_length": cfg.original_max_position_embeddings,
        "phi3.embedding_length": cfg.hidden_size, "phi3.feed_forward_length": cfg.intermediate_size,
        "phi3.attention.head_count": cfg.num_attention_heads, "phi3.attention.head_count_kv": cfg.num_key_value_heads,
        "phi3.attention.layer_norm_rms_epsilon": float(cfg.rms_norm_eps), "phi3.rope.dimension_count": rope_dims,
        "phi3.rope.freq_base": float(rope["rope_theta"]), "phi3.attention.sliding_window": cfg.sliding_window or 0,
        "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "gpt-2", "tokenizer.ggml.bos_token_id": 1,
        "tokenizer.ggml.eos_token_id": 2, "tokenizer.ggml.add_bos_token": False,
    }
    if rope["rope_type"] == "longrope":
        scale = cfg.max_position_embeddings / cfg.original_max_position_embeddings
        metadata["phi3.rope.scaling.attn_factor"] = float(
            np.sqrt(1 + np.log(scale) / np.log(cfg.original_max_position_embeddings)))
    metadata.update(extra or {})
    for key, value in metadata.items():
        if value is not None:
            writer.add_key_value(key, value, _value_type(value))
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    names = {"self_attn.qkv_proj": "attn_qkv", "self_attn.o_proj": "attn_output", "mlp.gate_up_proj": "ffn_up",
             "mlp.down_proj": "ffn_down", "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm"}
    reference: dict[str, torch.Tensor] = {}
    for hf_name, tensor in hf.state_dict().items():
        if hf_name == "model.embed_tokens.weight":
            name = "token_embd.weight"
        elif hf_name == "model.norm.weight":
            name = "output_norm.weight"
        elif hf_name == "lm_head.weight":
            if cfg.tie_word_embeddings:
                continue
            name = "output.weight"
        else:
            _, _, layer, rest = hf_name.split(".", 3)
            module, kind = rest.rsplit(".", 1)
            name = f"blk.{layer}.{names[module]}.{kind}"
        if name in skip:
            continue
        array = tensor.detach().float().numpy()
        kind_q = qtype if array.ndim == 2 else gguf.GGMLQuantizationType.F32
        stored = gguf.quants.quantize(array, kind_q)
        writer.add_tensor(name, stored, raw_dtype=kind_q)
        back = np.array(gguf.quants.dequantize(stored, kind_q), dtype=np.float32).reshape(array.shape)
        reference[hf_name] = torch.from_numpy(back)
    if rope["rope_type"] == "longrope":
        for name, key in (("rope_factors_long.weight", "long_factor"), ("rope_factors_short.weight", "short_factor")):
            if name not in skip:
                writer.add_tensor(name, np.array(rope[key], dtype=np.float32))
    return finish(writer, reference, cfg.tie_word_embeddings)


CASES = [("F32", 1.0, False), ("F16", 0.75, True), ("Q8_0", 0.75, True), ("Q8_0", 1.0, False)]


@pytest.mark.parametrize(("qtype", "partial", "longrope"), CASES,
                         ids=["F32", "F16-partial-longrope", "Q8_0-partial-longrope", "Q8_0-tied"])
def test_gguf_matches_transformers(tmp_path: Path, qtype: str, partial: float, longrope: bool) -> None:
    """Our GGUF load against Phi3ForCausalLM holding the weights the file holds (dequantized)."""
    tied = qtype == "Q8_0" and not longrope
    hf = tiny_phi3(partial, longrope, tied=tied)
    path = tmp_path / f"phi3-{qtype}.gguf"
    hf.load_state_dict(write_phi3_gguf(path, hf, gguf.GGMLQuantizationType[qtype]), strict=True)
    loaded = load_checkpoint(path)
    cfg = loaded.model.cfg
    assert cfg.rotary_dims == int(D_HEAD * partial) and cfg.tied_embeddings == tied
    assert (cfg.rope_original_context == ORIGINAL) == longrope
    assert loaded.meta["tensor_types"].get(qtype)
    assert compare(loaded.model, hf) <= TOL


@pytest.mark.parametrize("qtype", ["F32", "Q8_0"])
def test_gguf_matches_transformers_own_gguf_reader(tmp_path: Path, qtype: str) -> None:
    """transformers reads phi3 GGUF files itself (load_gguf_checkpoint, what from_pretrained(gguf_file=) calls; that
    call also wants accelerate): its config and its tensors, fused as the file holds them. Tokens and log-probs
    agree. Its reader skips rope.dimension_count and the longrope tensors, so this compares full-rotary files."""
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    path = tmp_path / "phi3.gguf"
    write_phi3_gguf(path, tiny_phi3(), gguf.GGMLQuantizationType[qtype])
    config = load_gguf_checkpoint(str(path), return_tensors=False)["config"]
    assert config.pop("model_type") == "phi3"
    theirs = transformers.Phi3ForCausalLM(transformers.Phi3Config(**config, attn_implementation="eager",
                                                                  pad_token_id=0)).eval()
    tensors = load_gguf_checkpoint(str(path), return_tensors=True, model_to_load=theirs)["tensors"]
    theirs.load_state_dict(tensors, strict=True)
    assert compare(load_checkpoint(path).model, theirs) <= TOL


# ---------------------------------------------------------------- refusals, by name


@pytest.mark.parametrize(("change", "named"), [
    ({"rope_parameters": {"rope_type": "yarn", "rope_theta": 1000.0, "factor": 2.0}},
     "rope_parameters.rope_type = 'yarn'"),
    ({"rope_parameters": {"rope_type": "dynamic", "rope_theta": 1000.0, "factor": 2.0}},
     "'dynamic' is not implemented"),
    ({"rope_parameters": {"rope_type": "longrope", "rope_theta": 1000.0, "short_factor": [1.0] * 8,
                          "long_factor": [1.0] * 8, "beta_fast": 3}}, "beta_fast = 3"),
    ({"rope_parameters": {"rope_type": "longrope", "rope_theta": 1000.0, "short_factor": [1.0] * 6,
                          "long_factor": [1.0] * 8}}, "short_factor has 6 factors"),
    ({"rope_parameters": {"rope_type": "default", "rope_theta": 1000.0, "partial_rotary_factor": 0.1}},
     "partial_rotary_factor = 0.1"),
    ({"attention_bias": True}, "attention_bias"),
    ({"mlp_bias": True}, "mlp_bias"),
    ({"lm_head_bias": True}, "lm_head_bias"),
    ({"full_attn_mod": 2}, "full_attn_mod"),
    ({"interpolate_factor": 4}, "interpolate_factor"),
    ({"hidden_act": "gelu_10"}, "hidden_act = 'gelu_10'"),
    ({"some_new_field": 1}, "some_new_field"),
])
def test_hf_fields_refused_by_name(change: dict[str, Any], named: str) -> None:
    hf = tiny_phi3()
    config = {**hf.config.to_dict(), "partial_rotary_factor": 1.0, **change}
    with pytest.raises(CheckpointError, match="phi3") as error:
        convert_hf(config, dict(hf.state_dict()))
    assert named in str(error.value)


@pytest.mark.parametrize(("extra", "skip", "named"), [
    ({"phi3.rope.dimension_count": 5}, (), "phi3.rope.dimension_count = 5"),
    ({"phi3.rope.scaling.attn_factor": 1.5}, (), "phi3.rope.scaling.attn_factor = 1.5"),
    ({"phi3.rope.scaling.type": "yarn"}, (), "rope.scaling.type = 'yarn'"),
    # the head size is read from key_length (8), so the default 16 turned dimensions no longer fit in a head
    ({"phi3.attention.key_length": 8}, (), "phi3.rope.dimension_count = 16"),
    ({}, ("rope_factors_long.weight",), "only one of the tensors"),
])
def test_gguf_refused_by_name(tmp_path: Path, extra: dict[str, Any], skip: tuple[str, ...], named: str) -> None:
    hf = tiny_phi3(longrope="rope_factors_long.weight" in skip)
    path = tmp_path / "bad.gguf"
    write_phi3_gguf(path, hf, gguf.GGMLQuantizationType.F32, extra=extra, skip=skip)
    with pytest.raises(CheckpointError) as error:
        load_checkpoint(path)
    assert named in str(error.value)
