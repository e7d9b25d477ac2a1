"""Every config field the Hugging Face loader lists: parity with transformers, or a refusal naming it.

Tiny random models are built here (never downloaded). For each field of every family record's `fields`:
- read and inert fields, set to a non-default value: our logits (BERT: last hidden state) equal
  transformers' on the same weights within 1e-4;
- fields accepted only at their default: a CheckpointError naming the field and its value.
The seven configs that were silently wrong before come first.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import pytest
import torch

from checkpoints import CheckpointError, build_model
from checkpoints.families import HF_FAMILIES
from checkpoints.hf import convert_hf
from checkpoints.hf_common import GENERIC_FIELDS
from model import Transformer
from model.config import TransformerConfig

transformers = pytest.importorskip("transformers")
TOL = 1e-4
HF_FIELDS = {model_type: family.fields for model_type, family in HF_FAMILIES.items()}  # each record's fields

LLAMA_BASE = dict(
    vocab_size=101, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, max_position_embeddings=128, tie_word_embeddings=False,
)
# a window shorter than the 20-token test sentence and a query scale other than 1/√head_dim, so both count
GEMMA_BASE = LLAMA_BASE | {"head_dim": 16, "sliding_window": 6, "query_pre_attn_scalar": 24}
QWEN35_MOE = {k: v for k, v in LLAMA_BASE.items() if k != "intermediate_size"} | {
    "head_dim": 16, "linear_key_head_dim": 8, "linear_value_head_dim": 12, "linear_num_key_heads": 2,
    "linear_num_value_heads": 4, "linear_conv_kernel_dim": 3, "layer_types": ["full_attention", "linear_attention"],
    "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 24}
TINY_VISION = {"depth": 1, "hidden_size": 32, "num_heads": 2, "intermediate_size": 32, "out_hidden_size": 64,
               "patch_size": 4, "temporal_patch_size": 2, "spatial_merge_size": 2}
QWEN35_MOE_VL = {"text_config": QWEN35_MOE, "vision_config": TINY_VISION}
FAMILIES: dict[str, tuple[str, str, dict[str, Any]]] = {
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", dict(vocab_size=97, n_positions=64, n_embd=48, n_layer=3, n_head=4)),
    "llama": ("LlamaConfig", "LlamaForCausalLM", LLAMA_BASE),
    "mistral": ("MistralConfig", "MistralForCausalLM", LLAMA_BASE),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", LLAMA_BASE),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", LLAMA_BASE | {"head_dim": 16}),
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM", GEMMA_BASE),
    "gemma3_text": ("Gemma3TextConfig", "Gemma3ForCausalLM", GEMMA_BASE),
    # Phi-3: a longrope switch at 12 tokens (original_max_position_embeddings), so 20-token tests cross it
    "phi3": ("Phi3Config", "Phi3ForCausalLM", LLAMA_BASE | {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2,
                                                            "original_max_position_embeddings": 12}),
    "starcoder2": ("Starcoder2Config", "Starcoder2ForCausalLM", LLAMA_BASE),
    # Gemma 4: local heads of 16, global ones of 32 (layer 1), per-layer inputs 8 wide
    "gemma4_text": ("Gemma4TextConfig", "Gemma4ForCausalLM", LLAMA_BASE | {
        "head_dim": 16, "sliding_window": 6, "global_head_dim": 32, "hidden_size_per_layer_input": 8,
        "vocab_size_per_layer_input": 101}),
    # SmolLM3: a NoPE layer every second layer (layer 1), so the 2-layer model has one of each
    "smollm3": ("SmolLM3Config", "SmolLM3ForCausalLM", LLAMA_BASE | {"no_rope_layer_interval": 2, "pad_token_id": 0,
                                                                      "bos_token_id": 1, "eos_token_id": 2}),
    # Qwen3-MoE: 4 experts of 32, 2 chosen per token
    "qwen3_moe": ("Qwen3MoeConfig", "Qwen3MoeForCausalLM", LLAMA_BASE | {
        "head_dim": 16, "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32}),
    # Qwen3.5: a full-attention layer, then a gated DeltaNet layer (key heads of 8, value heads of 12, a kernel of 3)
    "qwen3_5_text": ("Qwen3_5TextConfig", "Qwen3_5ForCausalLM", LLAMA_BASE | {
        "head_dim": 16, "linear_key_head_dim": 8, "linear_value_head_dim": 12, "linear_num_key_heads": 2,
        "linear_num_value_heads": 4, "linear_conv_kernel_dim": 3,
        "layer_types": ["full_attention", "linear_attention"]}),
    # Qwen3.5 as published: that text model inside Qwen3_5ForConditionalGeneration (a one-block vision tower)
    "qwen3_5": ("Qwen3_5Config", "Qwen3_5ForConditionalGeneration", {"text_config": LLAMA_BASE | {
        "head_dim": 16, "linear_key_head_dim": 8, "linear_value_head_dim": 12, "linear_num_key_heads": 2,
        "linear_num_value_heads": 4, "linear_conv_kernel_dim": 3,
        "layer_types": ["full_attention", "linear_attention"]}, "vision_config": TINY_VISION}),
    # Qwen3.5-MoE: Qwen3.5's hybrid with 4 experts of 32 (2 chosen) and a shared expert of 24 in every layer
    "qwen3_5_moe_text": ("Qwen3_5MoeTextConfig", "Qwen3_5MoeForCausalLM", QWEN35_MOE),
    "qwen3_5_moe": ("Qwen3_5MoeConfig", "Qwen3_5MoeForConditionalGeneration", QWEN35_MOE_VL),
    "bert": ("BertConfig", "BertModel", dict(
        vocab_size=99, hidden_size=48, num_hidden_layers=2, num_attention_heads=4, intermediate_size=80,
        max_position_embeddings=64,
    )),
}

# (family, config changes, keys to drop from the written config): the seven that were silently wrong
SEVEN: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    ("llama", {"attention_bias": True}, ()),
    ("llama", {"mlp_bias": True}, ()),
    ("llama", {"hidden_act": "gelu"}, ()),
    ("gpt2", {"activation_function": "silu"}, ()),
    ("gpt2", {"scale_attn_by_inverse_layer_idx": True}, ()),
    ("mistral", {"sliding_window": 3}, ()),
    ("qwen2", {"use_sliding_window": True, "max_window_layers": 1, "sliding_window": 3}, ()),
]
# a non-default value for each field a converter reads (several where the field selects a code path)
READ_VALUES: dict[str, list[dict[str, Any]]] = {
    "model_type": [{}], "vocab_size": [{}], "hidden_size": [{}], "num_hidden_layers": [{}], "intermediate_size": [{}],
    "num_attention_heads": [{}], "n_positions": [{}], "n_embd": [{}], "n_layer": [{}], "n_head": [{}],
    "n_inner": [{"n_inner": 40}],
    "tie_word_embeddings": [{"tie_word_embeddings": True}, {"tie_word_embeddings": False}],
    "activation_function": [{"activation_function": a} for a in
                            ("relu", "gelu", "gelu_python", "gelu_pytorch_tanh", "gelu_fast", "swish")],
    "hidden_act": [{"hidden_act": a} for a in ("relu", "gelu_new", "gelu_pytorch_tanh", "swish", "silu")],
    "layer_norm_epsilon": [{"layer_norm_epsilon": 1e-2}], "layer_norm_eps": [{"layer_norm_eps": 1e-2}],
    "rms_norm_eps": [{"rms_norm_eps": 1e-2}],
    "scale_attn_by_inverse_layer_idx": [{"scale_attn_by_inverse_layer_idx": True}],
    "num_key_value_heads": [{"num_key_value_heads": 1}, {"num_key_value_heads": 4}],
    "head_dim": [{"head_dim": 16}, {"head_dim": 32}],  # 32: heads wider than hidden_size / heads (Qwen3-0.6B)
    "max_position_embeddings": [{"max_position_embeddings": 32}],
    "rope_parameters": [{"rope_parameters": {"rope_theta": 77.0, "rope_type": "default"}},
                        {"rope_parameters": {"rope_theta": 77.0, "rope_type": "linear", "factor": 2.0}},
                        {"rope_parameters": {"rope_theta": 500.0, "rope_type": "llama3", "factor": 8.0,
                                             "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                             "original_max_position_embeddings": 32}}],
    "rope_theta": [{"rope_theta": 500.0}],
    "rope_scaling": [{"rope_scaling": None}],
    "attention_bias": [{"attention_bias": True}], "mlp_bias": [{"mlp_bias": True}],
    "sliding_window": [{"sliding_window": 5}, {"sliding_window": None}],
    "use_sliding_window": [{"use_sliding_window": True, "sliding_window": 4, "max_window_layers": 0}],
    "max_window_layers": [{"use_sliding_window": True, "sliding_window": 3, "max_window_layers": 2}],
    "layer_types": [{"use_sliding_window": True, "sliding_window": 3,
                     "layer_types": ["sliding_attention", "full_attention"]}],
    "type_vocab_size": [{"type_vocab_size": 3}], "pad_token_id": [{"pad_token_id": 3}],
    "partial_rotary_factor": [{"partial_rotary_factor": 0.5}, {"partial_rotary_factor": 0.75}],
    "original_max_position_embeddings": [{"original_max_position_embeddings": 24, "rope_parameters": {
        "rope_type": "longrope", "rope_theta": 500.0, "short_factor": [1.5] * 8, "long_factor": [4.0] * 8}}],
}
PHI_LONGROPE = {"rope_type": "longrope", "rope_theta": 500.0, "short_factor": [1.0 + i / 8 for i in range(8)],
                "long_factor": [1.0 + i for i in range(8)]}
# Phi3Config takes only default and longrope RoPE (it renames su and yarn to longrope)
FAMILY_READ_VALUES: dict[tuple[str, str], list[dict[str, Any]]] = {
    ("phi3", "rope_parameters"): [{"rope_parameters": {"rope_theta": 77.0, "rope_type": "default"}},
                                  {"rope_parameters": PHI_LONGROPE},
                                  {"rope_parameters": PHI_LONGROPE | {"factor": 3.0}},
                                  {"rope_parameters": PHI_LONGROPE | {"attention_factor": 0.7}},
                                  {"rope_parameters": {**PHI_LONGROPE, "partial_rotary_factor": 0.5,
                                                       "short_factor": [1.2] * 4, "long_factor": [3.0] * 4}}],
    ("phi3", "rope_scaling"): [{"rope_scaling": None}, {"rope_scaling": PHI_LONGROPE}],
}
READ_VALUES |= {
    "hidden_activation": [{"hidden_activation": a} for a in ("gelu_pytorch_tanh", "gelu")],
    "query_pre_attn_scalar": [{"query_pre_attn_scalar": 40}],
    "attn_logit_softcapping": [{"attn_logit_softcapping": 1.5}, {"attn_logit_softcapping": None}],
    "final_logit_softcapping": [{"final_logit_softcapping": 2.0}, {"final_logit_softcapping": None}],
    "use_bidirectional_attention": [{"use_bidirectional_attention": False}],
    "rope_local_base_freq": [{"rope_local_base_freq": 33.0}],
    "sliding_window_pattern": [{"sliding_window_pattern": 1}, {"sliding_window_pattern": 2}],
    "_sliding_window_pattern": [{"_sliding_window_pattern": 2}],
    "norm_epsilon": [{"norm_epsilon": 1e-2}], "use_bias": [{"use_bias": False}, {"use_bias": True}],  # StarCoder2
    # Qwen3.5's DeltaNet layers
    "linear_conv_kernel_dim": [{"linear_conv_kernel_dim": 2}], "linear_key_head_dim": [{"linear_key_head_dim": 12}],
    "linear_value_head_dim": [{"linear_value_head_dim": 20}], "linear_num_key_heads": [{"linear_num_key_heads": 1}],
    "linear_num_value_heads": [{"linear_num_value_heads": 6, "linear_num_key_heads": 3}],
    "full_attention_interval": [{"full_attention_interval": 2, "layer_types": None}],
    "text_config": [{}],
}
READ_VALUES |= {  # SmolLM3's NoPE layers, Qwen3-MoE's experts
    "no_rope_layers": [{"no_rope_layers": [0, 1]}, {"no_rope_layers": [1, 1]}],
    "no_rope_layer_interval": [{"no_rope_layer_interval": 1}, {"no_rope_layer_interval": 4}],
    "num_experts": [{"num_experts": 6}], "num_local_experts": [{"num_local_experts": 3}],
    "num_experts_per_tok": [{"num_experts_per_tok": 1}, {"num_experts_per_tok": 3}],
    "moe_intermediate_size": [{"moe_intermediate_size": 24}], "decoder_sparse_step": [{"decoder_sparse_step": 2}],
    "mlp_only_layers": [{"mlp_only_layers": [0]}, {"mlp_only_layers": [0, 1]}],
    "norm_topk_prob": [{"norm_topk_prob": True}],
    "shared_expert_intermediate_size": [{"shared_expert_intermediate_size": 40}],  # Qwen3.5-MoE's shared expert
}
# SmolLM3's window: on the layers layer_types names (by default its NoPE layers), with use_sliding_window
FAMILY_READ_VALUES |= {
    ("smollm3", "use_sliding_window"): [{"use_sliding_window": True, "sliding_window": 4}],
    ("smollm3", "sliding_window"): [{"use_sliding_window": True, "sliding_window": 3}, {"sliding_window": 5}],
    ("smollm3", "layer_types"): [{"use_sliding_window": True, "sliding_window": 3,
                                  "layer_types": ["sliding_attention", "full_attention"]}],
}
# where Gemma spells a field's values its own way
FAMILY_READ_VALUES |= {
    **{(family, "layer_types"): [{"layer_types": ["full_attention", "sliding_attention"]},
                                 {"layer_types": ["sliding_attention", "sliding_attention"]}]
       for family in ("gemma2", "gemma3_text")},
    **{(family, "sliding_window"): [{"sliding_window": 5}, {"sliding_window": 40}]
       for family in ("gemma2", "gemma3_text")},
    # (every layer linear: transformers' own cache fails on it, use_cache or not)
    ("qwen3_5_text", "layer_types"): [{"layer_types": ["linear_attention", "full_attention"]}],
    ("qwen3_5_text", "hidden_act"): [{"hidden_act": "silu"}],
    ("qwen3_5_moe_text", "layer_types"): [{"layer_types": ["linear_attention", "full_attention"]}],
    ("qwen3_5_moe_text", "hidden_act"): [{"hidden_act": "silu"}],
    ("gemma3_text", "rope_parameters"): [{"rope_parameters": {
        "full_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 77.0},
        "sliding_attention": {"rope_type": "default", "rope_theta": 33.0}}}],
}
# Gemma 4: 4 layers (local, global, local, global) where the last two share K/V
G4_SHARED = {"num_hidden_layers": 4, "layer_types": ["sliding_attention", "full_attention"] * 2}
G4_MOE = {"enable_moe_block": True, "num_experts": 4, "top_k_experts": 2, "moe_intermediate_size": 16}  # its MoE block
G4_PROPORTIONAL = {"rope_type": "proportional", "partial_rotary_factor": 0.5, "rope_theta": 77.0}
READ_VALUES |= {  # read by Gemma 4 only
    "vocab_size_per_layer_input": [{"vocab_size_per_layer_input": 101}],
    "hidden_size_per_layer_input": [{"hidden_size_per_layer_input": 16}, {"hidden_size_per_layer_input": 0}],
    "attention_k_eq_v": [{"attention_k_eq_v": True, "num_global_key_value_heads": 1}, {"attention_k_eq_v": False}],
    "num_global_key_value_heads": [{"attention_k_eq_v": True, "num_global_key_value_heads": 4}],
    "num_kv_shared_layers": [G4_SHARED | {"num_kv_shared_layers": 2}],
    "use_double_wide_mlp": [G4_SHARED | {"num_kv_shared_layers": 2, "use_double_wide_mlp": True}],
    "global_head_dim": [{"global_head_dim": 16}, {"global_head_dim": 64}], "enable_moe_block": [G4_MOE],
    "top_k_experts": [G4_MOE],
    "per_layer_config": [{}],  # as transformers writes config.json: the global layers' head_dim there
}
FAMILY_READ_VALUES |= {("gemma4_text", field): values for field, values in {
    "hidden_activation": [{"hidden_activation": a} for a in ("gelu_pytorch_tanh", "gelu_new")],
    "rope_parameters": [{"rope_parameters": {"full_attention": G4_PROPORTIONAL | {"factor": 2.0},
                                             "sliding_attention": {"rope_type": "default", "rope_theta": 33.0}}},
                        {"rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 77.0},
                                             "sliding_attention": {"rope_type": "default", "rope_theta": 33.0}}}],
    "layer_types": [{"layer_types": ["full_attention", "full_attention"]},
                    {"layer_types": ["sliding_attention", "full_attention"]}],
    "sliding_window": [{"sliding_window": 5}, {"sliding_window": 40}],
    "num_experts": [G4_MOE], "moe_intermediate_size": [G4_MOE],
}.items()}
DROP: dict[str, tuple[str, ...]] = {"max_window_layers": ("layer_types",), "rope_theta": ("rope_parameters",)}
# a non-default value for each inert field
INERT_VALUES: dict[str, Any] = {
    "_name_or_path": "somewhere", "_commit_hash": "abc", "_attn_implementation": "eager",
    "_attn_implementation_autoset": True, "architectures": ["X"], "transformers_version": "0.0.1",
    "dtype": "float32", "torch_dtype": "bfloat16", "use_bfloat16": True, "torchscript": True,
    "tf_legacy_loss": True, "return_dict": False, "output_hidden_states": True, "output_attentions": True,
    "use_cache": False, "chunk_size_feed_forward": 1, "gradient_checkpointing": True, "initializer_range": 0.5,
    "id2label": {0: "a", 1: "b", 2: "c"}, "label2id": {"a": 0, "b": 1, "c": 2}, "num_labels": 3,
    "problem_type": "regression", "finetuning_task": "x", "tokenizer_class": "X", "prefix": "p",
    "task_specific_params": {"text-generation": {"do_sample": True}}, "bos_token_id": 3, "eos_token_id": 4,
    "pad_token_id": 5, "sep_token_id": 6, "decoder_start_token_id": 7, "max_length": 7, "min_length": 1,
    "do_sample": True, "early_stopping": True, "num_beams": 2, "num_beam_groups": 2, "diversity_penalty": 0.5,
    "temperature": 0.5, "top_k": 5, "top_p": 0.5, "typical_p": 0.5, "repetition_penalty": 1.5,
    "length_penalty": 2.0, "no_repeat_ngram_size": 2, "encoder_no_repeat_ngram_size": 2, "bad_words_ids": [[1]],
    "num_return_sequences": 2, "output_scores": True, "return_dict_in_generate": True, "forced_bos_token_id": 1,
    "forced_eos_token_id": 1, "remove_invalid_values": True, "exponential_decay_length_penalty": [1, 1.5],
    "suppress_tokens": [1], "begin_suppress_tokens": [1],
    "resid_pdrop": 0.3, "embd_pdrop": 0.3, "attn_pdrop": 0.3, "summary_type": "mean", "summary_use_proj": False,
    "summary_activation": "tanh", "summary_proj_to_labels": False, "summary_first_dropout": 0.3,
    "reorder_and_upcast_attn": True, "n_ctx": 32, "attention_dropout": 0.3, "pretraining_tp": 2,
    "is_llama_config": True, "hidden_dropout_prob": 0.3, "attention_probs_dropout_prob": 0.3,
    "residual_dropout": 0.3, "embedding_dropout": 0.3,
    "classifier_dropout": 0.3, "cache_implementation": "static", "hidden_act": "relu",
    "router_aux_loss_coef": 0.5, "output_router_logits": True, "sliding_window": 3,  # Qwen3-MoE
    # Qwen3.5: its multi-token-prediction head and state dtype; the wrapper's vision side
    "mtp_num_hidden_layers": 1, "mtp_use_dedicated_embeddings": True, "mamba_ssm_dtype": "float16",
    "vision_config": {"depth": 2, "hidden_size": 32, "num_heads": 2, "intermediate_size": 32, "out_hidden_size": 64},
    "image_token_id": 7, "video_token_id": 8, "vision_start_token_id": 9, "vision_end_token_id": 10,
    "intermediate_size": 40,  # Qwen3.5-MoE: the dense FFN's width, which none of its layers has
}
REFUSED_VALUES: dict[str, Any] = {
    "is_encoder_decoder": True, "is_decoder": True, "add_cross_attention": True, "tie_encoder_decoder": True,
    "cross_attention_hidden_size": 8, "pruned_heads": {"0": [1]}, "quantization_config": {"quant_method": "fp8"},
    "scale_attn_weights": False, "use_mrope": True, "position_embedding_type": "relative_key",
    "rope_interleaved": True, "use_sliding_window": True,  # Qwen3-MoE's window is refused
    # fields of Phi-4-mini's own code that transformers' Phi-3 does not read: only their plain values load
    "attention_bias": True, "mlp_bias": True, "lm_head_bias": True, "full_attn_mod": 2, "interpolate_factor": 4,
    "use_bidirectional_attention": "all",  # Gemma 4: bidirectional attention is not implemented
    "hidden_act": "gelu",  # Qwen3.5: its DeltaNet layers' activations are silu only
    "attn_output_gate": False, "mlp_only_layers": [1],
    "decoder_sparse_step": 2, "norm_topk_prob": False,  # Qwen3.5-MoE: experts in every layer, renormalised
}


def vocab_of(family: str) -> int:
    """The family's vocabulary size (a wrapper's is its text_config's)."""
    base = FAMILIES[family][2]
    return int(base.get("vocab_size") or base["text_config"]["vocab_size"])


def _hf_model(family: str, changes: dict[str, Any]) -> torch.nn.Module:
    config_class, model_class, base = FAMILIES[family]
    torch.manual_seed(0)
    # a copy: some configs write into what they are given (Qwen3.5 adds partial_rotary_factor to rope_parameters),
    # and the values are shared by every family's test
    config = getattr(transformers, config_class)(**copy.deepcopy(base | changes))
    kwargs = {"add_pooling_layer": False} if family == "bert" else {}
    model = getattr(transformers, model_class)(config, **kwargs).eval()
    with torch.no_grad():  # biases start at zero: make them count
        for name, param in model.named_parameters():
            if name.endswith(".bias") and "LayerNorm" not in name and "ln_" not in name:
                param.copy_(torch.randn_like(param) * 0.1)
    return model


@cache
def _plain(family: str) -> tuple[torch.nn.Module, TransformerConfig]:
    """The family's tiny model with no field changed, and the config we convert it to (built once)."""
    hf = _hf_model(family, {})
    return hf, _ours(hf, _written_config(hf, {}, ())).cfg


def _output(hf: torch.nn.Module, family: str, toks: torch.Tensor) -> torch.Tensor:
    out = hf(toks)
    if isinstance(out, tuple):  # return_dict=False
        return out[0]
    return out.last_hidden_state if family == "bert" else out.logits


def _written_config(hf: Any, changes: dict[str, Any], drop: tuple[str, ...]) -> dict[str, Any]:
    """What config.json holds: transformers' own dictionary, with the fields under test as written."""
    written: dict[str, Any] = hf.config.to_dict() | changes
    return {k: v for k, v in written.items() if k not in drop}


def _ours(hf: torch.nn.Module, written: dict[str, Any]) -> Transformer:
    state = {k: v.detach().clone() for k, v in hf.state_dict().items()}
    cfg, converted = convert_hf(written, state)
    return build_model(cfg, converted)


def assert_parity(family: str, changes: dict[str, Any], drop: tuple[str, ...] = ()) -> TransformerConfig:
    hf = _hf_model(family, changes)
    ours = _ours(hf, _written_config(hf, changes, drop))
    toks = torch.randint(0, vocab_of(family), (1, 20), generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        expected, got = _output(hf, family, toks), ours(toks)
    assert (got - expected).abs().max().item() <= TOL, (family, changes)
    return ours.cfg


@pytest.mark.parametrize(("family", "changes", "drop"), SEVEN, ids=[f"{f}-{c}" for f, c, _ in SEVEN])
def test_the_seven_fields_match_transformers(family: str, changes: dict[str, Any], drop: tuple[str, ...]) -> None:
    assert_parity(family, changes, drop)


def _cases(kind: str) -> list[tuple[str, str]]:
    out = []
    for family, fields in HF_FIELDS.items():
        names = {"read": fields.read, "inert": fields.inert - fields.read, "refused": set(fields.defaults)}[kind]
        for name in sorted(names):
            generic = name in GENERIC_FIELDS.inert | set(GENERIC_FIELDS.defaults)
            if generic and family not in ("gpt2", "llama")[: 1 if kind == "inert" else 2]:
                continue  # generic fields go through the same check for every family: one or two suffice
            out.append((family, name))
    return out


@pytest.mark.parametrize(("family", "field"), _cases("read"), ids=lambda v: str(v))
def test_every_read_field_matches_transformers(family: str, field: str) -> None:
    for changes in FAMILY_READ_VALUES.get((family, field), READ_VALUES[field]):
        if (field, family) in (("attention_bias", "mistral"), ("attention_bias", "qwen2")) or (
                field == "mlp_bias" and family != "llama"):
            continue
        assert_parity(family, changes, DROP.get(field, ()))


def test_per_layer_windows_reach_the_model() -> None:
    cfg = assert_parity("qwen2", READ_VALUES["layer_types"][0])
    assert (cfg.sliding_window, cfg.window_layers) == (3, (0,))
    assert assert_parity("mistral", {"sliding_window": 3}).window_of(1) == 3
    assert assert_parity("qwen2", {}).sliding_window is None  # use_sliding_window False: no window anywhere


@pytest.mark.parametrize(("family", "field"), _cases("inert"), ids=lambda v: str(v))
def test_every_inert_field_changes_nothing(family: str, field: str) -> None:
    """transformers computes the same with the field set, and so do we (our config does not change)."""
    changes = {field: INERT_VALUES[field]}
    toks = torch.randint(0, vocab_of(family), (1, 20), generator=torch.Generator().manual_seed(1))
    plain_hf, plain_cfg = _plain(family)
    try:
        hf = _hf_model(family, changes)
        with torch.inference_mode():
            expected = _output(hf, family, toks)
    except (ValueError, TypeError, AttributeError):  # transformers itself fails on this value: we must ignore it
        hf = plain_hf
        with torch.inference_mode():
            expected = _output(hf, family, toks)
    ours = _ours(hf, _written_config(hf, changes, ()))
    assert ours.cfg == plain_cfg
    with torch.inference_mode():
        assert (ours(toks) - expected).abs().max().item() <= TOL


@pytest.mark.parametrize(("family", "field"), _cases("refused"), ids=lambda v: str(v))
def test_every_unimplemented_field_is_refused_by_name(family: str, field: str) -> None:
    hf, _ = _plain(family)
    value = REFUSED_VALUES[field]
    written = _written_config(hf, {}, ()) | {field: value}
    with pytest.raises(CheckpointError, match=f"{field} = {value!r}".replace("[", r"\[").replace("{", r"\{")):
        convert_hf(written, hf.state_dict())
    written[field] = HF_FIELDS[family].defaults[field]  # the default value loads
    convert_hf(written, hf.state_dict())


@pytest.mark.parametrize(
    ("family", "changes", "named"),
    [
        ("gpt2", {"activation_function": "quick_gelu"}, "activation_function = 'quick_gelu'"),
        ("llama", {"hidden_act": "relu2"}, "hidden_act = 'relu2'"),
        ("bert", {"hidden_act": "mish"}, "hidden_act = 'mish'"),
        ("llama", {"rope_parameters": {"rope_type": "yarn", "factor": 2.0, "rope_theta": 1e4}},
         "rope_parameters.rope_type = 'yarn'"),
        ("llama", {"rope_scaling": {"type": "dynamic", "factor": 2.0}}, "rope_scaling.type = 'dynamic'"),
        ("llama", {"sliding_window": 3}, "sliding_window = 3"),  # Llama has no window: unknown to its loader
        ("mistral", {"attention_bias": True}, "attention_bias = True"),  # transformers' Mistral has no biases
        ("gpt2", {"rotary_dim": 8}, "rotary_dim = 8"),  # a field no table lists
        ("qwen2", {"use_sliding_window": True, "sliding_window": 3, "layer_types": ["chunked_attention"] * 2},
         "layer_types = \\['chunked_attention'"),
    ],
)
def test_values_the_converters_do_not_implement_are_refused(family: str, changes: dict[str, Any], named: str) -> None:
    hf, _ = _plain(family)
    with pytest.raises(CheckpointError, match=named):
        convert_hf(_written_config(hf, changes, ()), hf.state_dict())
