"""What every Hugging Face converter shares (the records of checkpoints/families/): the fields of every
config, the activation names, and reading weights out of a state dict by name."""

from __future__ import annotations

from typing import Any

import torch

from checkpoints.base import CheckpointError, ConfigFields, StateDict

# every Hugging Face config carries these (PretrainedConfig); none changes a number of the forward pass
GENERIC_FIELDS = ConfigFields(
    read=frozenset({"model_type", "tie_word_embeddings"}),
    inert=frozenset({
        "_name_or_path", "_commit_hash", "_attn_implementation", "_attn_implementation_autoset", "architectures",
        "transformers_version", "dtype", "torch_dtype", "use_bfloat16", "torchscript", "tf_legacy_loss",
        "return_dict", "output_hidden_states", "output_attentions", "use_cache", "chunk_size_feed_forward",
        "gradient_checkpointing", "initializer_range", "id2label", "label2id", "num_labels", "problem_type",
        "finetuning_task", "tokenizer_class", "prefix", "task_specific_params",
        "bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id", "decoder_start_token_id",
        # generation defaults (the explorer's sampler takes its own settings from each request)
        "max_length", "min_length", "do_sample", "early_stopping", "num_beams", "num_beam_groups",
        "diversity_penalty", "temperature", "top_k", "top_p", "typical_p", "repetition_penalty",
        "length_penalty", "no_repeat_ngram_size", "encoder_no_repeat_ngram_size", "bad_words_ids",
        "num_return_sequences", "output_scores", "return_dict_in_generate", "forced_bos_token_id",
        "forced_eos_token_id", "remove_invalid_values", "exponential_decay_length_penalty",
        "suppress_tokens", "begin_suppress_tokens",
    }),
    defaults={
        "is_encoder_decoder": False, "is_decoder": False, "add_cross_attention": False,
        "tie_encoder_decoder": False, "cross_attention_hidden_size": None, "pruned_heads": {},
        "quantization_config": None,
    },
)

# Hugging Face activation names (transformers.activations.ACT2FN) -> ours; the gated FFN of Llama-type
# models applies the same function to its gate (silu -> SwiGLU, gelu -> GEGLU, relu -> ReGLU)
ACTIVATIONS: dict[str, str] = {
    "gelu": "gelu", "gelu_python": "gelu",
    "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu_python_tanh": "gelu_tanh",
    "gelu_fast": "gelu_tanh",
    "relu": "relu", "silu": "silu", "swish": "silu",
}
GATED: dict[str, str] = {"gelu": "geglu", "gelu_tanh": "geglu_tanh", "relu": "reglu", "silu": "swiglu"}


def loader_name(model_type: str) -> str:
    return f"the Hugging Face {model_type} loader"  # the GGUF loader names itself the same way


def activation(hf_config: dict[str, Any], field: str, default: str, gated: bool = False) -> Any:
    value = hf_config.get(field, default)
    if value not in ACTIVATIONS:
        raise CheckpointError(
            f"{loader_name(str(hf_config.get('model_type')))}: config field {field} = {value!r} is not implemented "
            f"(implemented: {', '.join(sorted(ACTIVATIONS))})"
        )
    return GATED[ACTIVATIONS[value]] if gated else ACTIVATIONS[value]


def strip_prefix(state: StateDict, prefixes: tuple[str, ...]) -> StateDict:
    out: StateDict = {}
    for name, tensor in state.items():
        for prefix in prefixes:
            if name.startswith(prefix):
                name = name[len(prefix) :]
                break
        out[name] = tensor
    return out


def take(state: StateDict, name: str) -> torch.Tensor:
    if name not in state:
        raise CheckpointError(f"the checkpoint has no weight {name!r}")
    return state[name]


# a Llama-style layer's projections: Hugging Face name -> ours (attn.W_Q ..., mlp.W_gate ...)
ATTENTION_PROJECTIONS = {"q_proj": "W_Q", "k_proj": "W_K", "v_proj": "W_V", "o_proj": "W_O"}
MLP_PROJECTIONS = {"gate_proj": "W_gate", "up_proj": "W_in", "down_proj": "W_out"}


def projections(state: StateDict, hf: str, ours: str, attn_biases: frozenset[str] = frozenset(),
                mlp_bias: bool = False, mlp: bool = True) -> StateDict:
    """One layer's attention and gated-MLP weights (hf: "layers.3.", ours: "stack.blocks.3."); `attn_biases`: the
    attention projections that carry a bias (Qwen2: q, k and v only); `mlp_bias`: every MLP projection has one;
    `mlp` False: the layer's FFN is a mixture of experts (checkpoints/experts.py reads it)."""
    out: StateDict = {}
    for hf_name, our_name in ATTENTION_PROJECTIONS.items():
        out[ours + f"attn.{our_name}.weight"] = take(state, hf + f"self_attn.{hf_name}.weight")
        if hf_name in attn_biases:
            out[ours + f"attn.{our_name}.bias"] = take(state, hf + f"self_attn.{hf_name}.bias")
    for hf_name, our_name in MLP_PROJECTIONS.items() if mlp else ():
        out[ours + f"mlp.{our_name}.weight"] = take(state, hf + f"mlp.{hf_name}.weight")
        if mlp_bias:
            out[ours + f"mlp.{our_name}.bias"] = take(state, hf + f"mlp.{hf_name}.bias")
    return out


def layer_norms(state: StateDict, hf: str, ours: str) -> StateDict:
    """A Llama-style layer's two norms: before attention (input_layernorm) and before the FFN."""
    return {ours + "ln1.w": take(state, hf + "input_layernorm.weight"),
            ours + "ln2.w": take(state, hf + "post_attention_layernorm.weight")}


def final_norm(state: StateDict, tied: bool) -> StateDict:
    """The final norm (norm.weight) and, unless the embeddings are tied, the unembedding (lm_head.weight)."""
    out: StateDict = {"stack.ln_final.w": take(state, "norm.weight")}
    if not tied:
        out["W_U.weight"] = take(state, "lm_head.weight")
    return out
