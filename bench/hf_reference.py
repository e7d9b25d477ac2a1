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
