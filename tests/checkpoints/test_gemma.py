"""Gemma 2, Gemma 3 and heads of their own width (Qwen3 with head_dim != hidden / heads), from Hugging Face
directories and GGUF files the tests write: next-token log-probs equal transformers' within 1e-4 (and the same top
token everywhere), on tiny random models whose sliding window (7) is shorter than the sentence and whose soft caps
are small enough to bite. Fields not implemented are refused by name."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import torch

from checkpoints import CheckpointError, load_checkpoint
from tests.checkpoints.gguf_files import _value_type, byte_level_vocab, finish, gguf, transformers
from tests.checkpoints.test_families import compare, save_hf_directory, tokens, transformers_gguf_reader

TOL = 1e-4
QTYPES = ["F32", "F16", "Q8_0"]
WINDOW = 7


def tiny_gemma(arch: str, seed: int = 0, **changes: Any) -> torch.nn.Module:
    """3 layers (local, global, local), heads of 32 with d_model 64 and 4 heads, query_pre_attn_scalar 24."""
    torch.manual_seed(seed)
    common: dict[str, Any] = dict(
        vocab_size=len(byte_level_vocab()[0]), hidden_size=64, intermediate_size=96, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=128, rms_norm_eps=1e-6,
        sliding_window=WINDOW, query_pre_attn_scalar=24, attn_implementation="eager")
    common.update(changes)
    if arch == "gemma2":
        common.setdefault("attn_logit_softcapping", 0.08)
        common.setdefault("final_logit_softcapping", 0.4)
        model = transformers.Gemma2ForCausalLM(transformers.Gemma2Config(**common))
    else:
        common.setdefault("sliding_window_pattern", 2)
        common.setdefault("rope_theta", 1000.0)
        common.setdefault("rope_local_base_freq", 50.0)
        model = transformers.Gemma3ForCausalLM(transformers.Gemma3TextConfig(**common))
    with torch.no_grad():  # norm weights away from 0 (gains away from 1), so that a 1 + w mix-up shows
        for name, param in model.named_parameters():
            if "norm" in name:
                param.copy_(0.3 * torch.randn_like(param))
    return model.eval()


GEMMA_NAMES = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
               "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
               "mlp.down_proj": "ffn_down", "input_layernorm": "attn_norm",
               "post_attention_layernorm": "post_attention_norm", "pre_feedforward_layernorm": "ffn_norm",
               "post_feedforward_layernorm": "post_ffw_norm", "self_attn.q_norm": "attn_q_norm",
               "self_attn.k_norm": "attn_k_norm"}


def write_gemma_gguf(path: Path, hf: torch.nn.Module, arch: str, qtype: Any,
                     extra: dict[str, Any] | None = None) -> None:
    """hf as llama.cpp's Gemma2Model / Gemma3Model converters write it: every norm's weight + 1, Q/K unpermuted,
    the softcaps (gemma2) and the sliding window in the metadata, 2-D weights in qtype."""
    cfg = hf.config
    writer = gguf.GGUFWriter(str(path), arch)
    tokens_, merges, types = byte_level_vocab()
    metadata: dict[str, Any] = {
        f"{arch}.block_count": cfg.num_hidden_layers, f"{arch}.context_length": cfg.max_position_embeddings,
        f"{arch}.embedding_length": cfg.hidden_size, f"{arch}.feed_forward_length": cfg.intermediate_size,
        f"{arch}.attention.head_count": cfg.num_attention_heads,
        f"{arch}.attention.head_count_kv": cfg.num_key_value_heads,
        f"{arch}.attention.key_length": cfg.head_dim, f"{arch}.attention.value_length": cfg.head_dim,
        f"{arch}.attention.layer_norm_rms_epsilon": float(cfg.rms_norm_eps),
        f"{arch}.attention.sliding_window": cfg.sliding_window,
        "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "qwen2", "tokenizer.ggml.bos_token_id": 1,
        "tokenizer.ggml.eos_token_id": 2, "tokenizer.ggml.add_bos_token": False,
    }
    if arch == "gemma2":
        metadata[f"{arch}.rope.freq_base"] = float(cfg.rope_parameters["rope_theta"])
        metadata[f"{arch}.attn_logit_softcapping"] = float(cfg.attn_logit_softcapping)
        metadata[f"{arch}.final_logit_softcapping"] = float(cfg.final_logit_softcapping)
    else:
        full = cfg.rope_parameters["full_attention"]
        metadata[f"{arch}.rope.freq_base"] = float(full["rope_theta"])
        if full["rope_type"] == "linear":
            metadata[f"{arch}.rope.scaling.type"] = "linear"
            metadata[f"{arch}.rope.scaling.factor"] = float(full["factor"])
        metadata[f"{arch}.rope.freq_base_swa"] = float(cfg.rope_parameters["sliding_attention"]["rope_theta"])
    metadata.update(extra or {})
    for key, value in metadata.items():
        if value is not None:
            writer.add_key_value(key, value, _value_type(value))
    writer.add_token_list(tokens_)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    for hf_name, tensor in hf.state_dict().items():
        if hf_name == "lm_head.weight" and cfg.tie_word_embeddings:
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
            name = f"blk.{layer}.{GEMMA_NAMES[module]}.{kind}"
        data = tensor.detach().float()
        if name.endswith("norm.weight"):
            data = data + 1  # llama.cpp's converter: the gain Gemma's RMSNorm multiplies by
        array = data.numpy()
        kind_q = qtype if array.ndim == 2 else gguf.GGMLQuantizationType.F32
        writer.add_tensor(name, gguf.quants.quantize(array, kind_q), raw_dtype=kind_q)
    finish(writer, {})


def gemma_gguf_reference(path: Path) -> torch.nn.Module:
    """transformers' own GGUF reader on the file (its config, its tensors with the + 1 undone), with the settings
    its reader does not map taken from the file as llama.cpp reads them: the soft caps, the local layers' RoPE
    base and the linear scaling, and the query scale (llama.cpp: 1 / √key_length below 27B)."""
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    fields = {name: field.contents() for name, field in gguf.GGUFReader(str(path)).fields.items()}
    arch = fields["general.architecture"]
    config = load_gguf_checkpoint(str(path), return_tensors=False)["config"]
    config["query_pre_attn_scalar"] = fields[f"{arch}.attention.key_length"]
    if arch == "gemma2":
        config["attn_logit_softcapping"] = fields[f"{arch}.attn_logit_softcapping"]
        config["final_logit_softcapping"] = fields[f"{arch}.final_logit_softcapping"]
    else:
        full: dict[str, Any] = {"rope_type": "default", "rope_theta": fields[f"{arch}.rope.freq_base"]}
        if fields.get(f"{arch}.rope.scaling.type") == "linear":
            full.update(rope_type="linear", factor=fields[f"{arch}.rope.scaling.factor"])
        config["rope_parameters"] = {"full_attention": full, "sliding_attention": {
            "rope_type": "default", "rope_theta": fields.get(f"{arch}.rope.freq_base_swa", 10000.0)}}
        config.pop("rope_theta", None)
        config["sliding_window_pattern"] = 6
    config_class = transformers.AutoConfig.for_model(config.pop("model_type")).__class__
    model = transformers.AutoModelForCausalLM.from_config(config_class(**config), attn_implementation="eager")
    tensors = load_gguf_checkpoint(str(path), return_tensors=True, model_to_load=model)["tensors"]
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    assert not unexpected and set(missing) <= {"lm_head.weight"}, (missing, unexpected)
    model.tie_weights()
    return model.float().eval()


# ---------------------------------------------------------------- Hugging Face directories


@pytest.mark.parametrize("arch", ["gemma2", "gemma3"])
def test_gemma_directory_matches_transformers(tmp_path: Path, arch: str) -> None:
    hf = tiny_gemma(arch) if arch == "gemma2" else tiny_gemma(arch, rope_scaling={"rope_type": "linear",
                                                                                   "factor": 2.0})
    save_hf_directory(hf, tmp_path)
    loaded = load_checkpoint(tmp_path)
    cfg = loaded.model.cfg
    assert (cfg.d_head, cfg.sliding_window, cfg.window_of(0), cfg.window_of(1)) == (32, WINDOW, WINDOW, None)
    assert cfg.post_norms and cfg.scale_embeddings and cfg.score_scale_dim == 24.0
    if arch == "gemma2":
        assert (cfg.attn_softcap, cfg.logit_softcap, cfg.qk_norm) == (0.08, 0.4, False)
    else:
        assert cfg.qk_norm and cfg.rope_of(0) == (50.0, None) and cfg.rope_of(1) == (1000.0, (2.0,) * 16)
    toks = tokens(cfg.vocab_size)
    assert compare(loaded.model, hf, toks) <= TOL
    _, trace = loaded.model.run_with_trace(toks)
    assert "blocks.0.ln1_post.hook_normalized" in trace and "blocks.0.ln2_post.hook_normalized" in trace
    if arch == "gemma2":  # the caps bite: raw scores and logits beyond the cap, the capped ones inside it
        assert trace["hook_logits_raw"].abs().max() > 0.4 > trace["hook_logits"].abs().max()
        capped = trace["blocks.0.attn.hook_scores_capped"]
        assert trace["blocks.0.attn.hook_scores_scaled"].abs().max() > 0.08 > capped.abs().max()


def test_the_sliding_window_and_local_rope_matter(tmp_path: Path) -> None:
    """The same weights with every layer global (or one RoPE base) give other numbers: the test can fail."""
    hf = tiny_gemma("gemma3")
    toks = tokens(hf.config.vocab_size)
    for changes in ({"sliding_window_pattern": 1, "layer_types": None}, {"rope_local_base_freq": 1000.0}):
        other = tiny_gemma("gemma3", **changes)
        other.load_state_dict(hf.state_dict())
        with torch.inference_mode():
            assert (other(toks).logits - hf(toks).logits).abs().max().item() > 10 * TOL


# ---------------------------------------------------------------- GGUF files


@pytest.mark.parametrize("qtype", QTYPES)
@pytest.mark.parametrize("arch", ["gemma2", "gemma3"])
def test_gemma_gguf_matches_transformers_reading_the_same_file(tmp_path: Path, arch: str, qtype: str) -> None:
    # gemma3: 6 layers, llama.cpp's pattern (layer 5 global), linear RoPE scaling on it
    changes: dict[str, Any] = {"rope_scaling": {"rope_type": "linear", "factor": 2.0}, "num_hidden_layers": 6,
                               "sliding_window_pattern": 6} if arch == "gemma3" else {}
    hf = tiny_gemma(arch, query_pre_attn_scalar=32, **changes)  # llama.cpp's query scale: 1 / √key_length
    path = tmp_path / f"{arch}-{qtype}.gguf"
    write_gemma_gguf(path, hf, arch, gguf.GGMLQuantizationType[qtype])
    reference = gemma_gguf_reference(path)
    loaded = load_checkpoint(path)
    cfg = loaded.model.cfg
    assert loaded.meta["gguf_architecture"] == arch and cfg.d_head == 32 and cfg.score_scale_dim is None
    glob = 5 if arch == "gemma3" else 1
    assert cfg.window_of(0) == WINDOW and cfg.window_of(glob) is None
    toks = tokens(cfg.vocab_size)
    assert compare(loaded.model, reference, toks) <= TOL
    if qtype == "F32":  # the file's model is the directory's model
        assert compare(loaded.model, hf, toks) <= TOL


# ---------------------------------------------------------------- heads of their own width (Qwen3-0.6B, -4B)


def tiny_qwen3_wide_heads() -> torch.nn.Module:
    torch.manual_seed(0)
    config = transformers.Qwen3Config(vocab_size=len(byte_level_vocab()[0]), hidden_size=64, intermediate_size=96,
                                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=24,
                                      max_position_embeddings=128, rope_theta=1000.0, tie_word_embeddings=False,
                                      attn_implementation="eager")
    model = transformers.Qwen3ForCausalLM(config)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "norm" in name:
                param.copy_(1.0 + 0.3 * torch.randn_like(param))
    return model.eval()


def test_qwen3_with_wider_heads_directory_matches_transformers(tmp_path: Path) -> None:
    hf = tiny_qwen3_wide_heads()
    save_hf_directory(hf, tmp_path)
    loaded = load_checkpoint(tmp_path)
    cfg = loaded.model.cfg
    assert (cfg.d_model, cfg.n_heads, cfg.d_head, cfg.head_dim) == (64, 4, 24, 24)
    assert tuple(loaded.model.stack.blocks[0].attn.W_O.weight.shape) == (64, 96)
    assert compare(loaded.model, hf, tokens(cfg.vocab_size)) <= TOL
    assert "head_dim" in cfg.to_dict()


@pytest.mark.parametrize("qtype", QTYPES)
def test_qwen3_with_wider_heads_gguf_matches_transformers(tmp_path: Path, qtype: str) -> None:
    from tests.checkpoints.gguf_files import write_gguf

    hf = tiny_qwen3_wide_heads()
    path = tmp_path / f"qwen3-wide-{qtype}.gguf"
    write_gguf(path, hf, "qwen3", gguf.GGMLQuantizationType[qtype],
               extra={"qwen3.attention.key_length": 24, "qwen3.attention.value_length": 24,
                      "qwen3.rope.dimension_count": 24})
    loaded = load_checkpoint(path)
    assert loaded.model.cfg.d_head == 24
    assert compare(loaded.model, transformers_gguf_reader(path), tokens(loaded.model.cfg.vocab_size)) <= TOL


def test_existing_configs_are_written_as_before() -> None:
    from model.config import TransformerConfig

    data = TransformerConfig().to_dict()
    for name in ("head_dim", "post_norms", "attn_softcap", "logit_softcap", "score_scale_dim", "rope_base_local"):
        assert name not in data


# ---------------------------------------------------------------- refusals, by name


@pytest.mark.parametrize(("changes", "named"), [
    ({"use_bidirectional_attention": True}, "use_bidirectional_attention = True is not implemented"),
    ({"layer_types": ["sliding_attention", "chunked_attention", "full_attention"]}, "layer_types = "),
    ({"rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 1e6},
                          "sliding_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e4}}},
     "RoPE scaling on the local layers"),
    ({"rope_parameters": {"full_attention": {"rope_type": "yarn", "factor": 4.0, "rope_theta": 1e6}}},
     "rope_type = 'yarn' is not implemented"),
    ({"hidden_activation": "gelu_fast_new"}, "hidden_activation = 'gelu_fast_new' is not implemented"),
    ({"final_logit_scaling": 2.0}, "final_logit_scaling = 2.0 is not one this loader knows"),
])
def test_hf_gemma_fields_not_implemented_are_refused(changes: dict[str, Any], named: str) -> None:
    from checkpoints.hf import convert_hf

    hf = tiny_gemma("gemma3")
    config = {**hf.config.to_dict(), **changes}
    with pytest.raises(CheckpointError, match=re.escape(named)):
        convert_hf(config, hf.state_dict())


@pytest.mark.parametrize(("arch", "extra", "named"), [
    ("gemma2", {"gemma2.attention.value_length": 16}, "value_length = 16, but the head size is 32"),
    ("gemma2", {"gemma2.attn_logit_softcapping": None}, "the metadata has no gemma2.attn_logit_softcapping"),
    ("gemma3", {"gemma3.attn_logit_softcapping": 50.0}, "attn_logit_softcapping = 50.0 (attention logit "
                                                        "soft-capping) is not implemented"),
    ("gemma3", {"gemma3.rope.scaling.type": "yarn"}, "rope.scaling.type = 'yarn'"),
    ("gemma3", {"gemma3.attention.scale": 0.5}, "attention.scale = 0.5 (attention scaling)"),
    ("gemma2", {"gemma2.embedding_scale": 2.0}, "embedding_scale = 2.0 (embedding scaling) is not implemented"),
])
def test_gguf_gemma_keys_not_implemented_are_refused(tmp_path: Path, arch: str, extra: dict[str, Any],
                                                     named: str) -> None:
    path = tmp_path / "refused.gguf"
    write_gemma_gguf(path, tiny_gemma(arch), arch, gguf.GGMLQuantizationType.F32, extra=extra)
    with pytest.raises(CheckpointError, match=re.escape(named)):
        load_checkpoint(path)

