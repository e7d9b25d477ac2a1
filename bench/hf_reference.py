"""The same weights in `transformers`: this project's Llama-style decoder (a loaded GGUF, e.g. smollm2) as a
`LlamaForCausalLM`, so a benchmark can run both on one set of dequantized numbers (the inverse of
checkpoints/families/llama.py's convert_hf)."""

from __future__ import annotations

from typing import Any

from model.transformer import Transformer

NAMES = {"W_Q": "q_proj", "W_K": "k_proj", "W_V": "v_proj", "W_O": "o_proj"}


def llama_for_causal_lm(model: Transformer, attn_implementation: str = "sdpa") -> Any:
    """A transformers LlamaForCausalLM holding `model`'s weights (a RoPE / RMSNorm / SwiGLU decoder without biases)."""
    import transformers

    cfg = model.cfg
    if (cfg.architecture, cfg.pos_encoding, cfg.norm, cfg.activation) != ("decoder", "rope", "rmsnorm", "swiglu"):
        raise ValueError("only a Llama-style decoder (RoPE, RMSNorm, SwiGLU) has a LlamaForCausalLM twin")
    if cfg.use_qkv_bias or cfg.bias or cfg.sliding_window:
        raise ValueError("biases and sliding windows are not part of LlamaForCausalLM")
    options: dict[str, Any] = {  # rope_theta and attn_implementation are taken through **kwargs
        "vocab_size": cfg.vocab_size, "hidden_size": cfg.d_model, "intermediate_size": cfg.mlp_width,
        "num_hidden_layers": cfg.n_layers, "num_attention_heads": cfg.n_heads, "num_key_value_heads": cfg.kv_heads,
        "max_position_embeddings": cfg.n_ctx, "rms_norm_eps": cfg.norm_eps, "rope_theta": cfg.rope_base,
        "tie_word_embeddings": cfg.tied_embeddings, "attention_bias": False, "mlp_bias": False,
        "attn_implementation": attn_implementation,
    }
    hf_cfg = transformers.LlamaConfig(**options)
    ours = model.state_dict()
    state = {"model.embed_tokens.weight": ours["stack.embed.W_E.weight"], "model.norm.weight": ours["stack.ln_final.w"]}
    for layer in range(cfg.n_layers):
        src, dst = f"stack.blocks.{layer}.", f"model.layers.{layer}."
        for our_name, hf_name in NAMES.items():
            state[dst + f"self_attn.{hf_name}.weight"] = ours[src + f"attn.{our_name}.weight"]
        state[dst + "mlp.gate_proj.weight"] = ours[src + "mlp.W_gate.weight"]
        state[dst + "mlp.up_proj.weight"] = ours[src + "mlp.W_in.weight"]
        state[dst + "mlp.down_proj.weight"] = ours[src + "mlp.W_out.weight"]
        state[dst + "input_layernorm.weight"] = ours[src + "ln1.w"]
        state[dst + "post_attention_layernorm.weight"] = ours[src + "ln2.w"]
    state["lm_head.weight"] = ours["stack.embed.W_E.weight"] if cfg.tied_embeddings else ours["W_U.weight"]
    hf = transformers.LlamaForCausalLM(hf_cfg)
    hf.load_state_dict(state, strict=True)
    return hf.eval()


# Qwen3.5-0.8B's text model as its model card publishes it: hidden 1024, 24 layers, 6 × (3 gated DeltaNet + 1 gated
# full attention), DeltaNet 16 key and 16 value heads of 128, attention 8 heads / 2 K/V heads of 256 with RoPE on a
# quarter of each head (theta 1e7), SwiGLU 3584, vocabulary 248320, tied embeddings.
QWEN35_08B: dict[str, Any] = {
    "vocab_size": 248320, "hidden_size": 1024, "intermediate_size": 3584, "num_hidden_layers": 24,
    "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 256, "linear_num_key_heads": 16,
    "linear_num_value_heads": 16, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
    "linear_conv_kernel_dim": 4, "max_position_embeddings": 4096, "rms_norm_eps": 1e-6, "tie_word_embeddings": True,
    "rope_parameters": {"rope_type": "default", "rope_theta": 10_000_000.0, "partial_rotary_factor": 0.25},
}


def qwen35_pair(vocab: int | None = None, attn_implementation: str = "sdpa", seed: int = 0) -> tuple[Any, Transformer]:
    """transformers' Qwen3_5ForCausalLM with random weights in Qwen3.5-0.8B's shape (vocab: a smaller vocabulary)
    and this project's model converted from it (checkpoints/families/qwen35.py): the two share their weight tensors
    where the conversion leaves them as they are (the norms' gains 1 + w and the attention's q/gate split are
    copies), so the pair costs about one model's memory."""
    import torch
    import transformers

    from checkpoints.base import build_model
    from checkpoints.hf import convert_hf

    fields: dict[str, Any] = QWEN35_08B | {"vocab_size": vocab or QWEN35_08B["vocab_size"],
                                           "attn_implementation": attn_implementation}
    torch.manual_seed(seed)
    hf = transformers.Qwen3_5ForCausalLM(transformers.Qwen3_5TextConfig(**fields)).eval()
    with torch.no_grad():  # gains away from their initial values, so a norm mix-up would show in the gap
        for name, param in hf.named_parameters():
            if "norm" in name:
                param.add_(0.1 * torch.randn_like(param))
    config = hf.config.to_dict() | {"model_type": "qwen3_5_text"}
    cfg, state = convert_hf(config, {name: tensor.detach() for name, tensor in hf.state_dict().items()})
    return hf, build_model(cfg, state).eval()
