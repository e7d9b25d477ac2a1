"""Tiny random models with the fields Gemma 2, Gemma 3 and Phi-3 / Phi-4-mini add (model/config.py), for the lab
experiments and analyses that recompute part of a forward pass: heads wider than d_model / n_heads, a norm after
each sub-layer, soft caps that bite, a query scale of its own, local layers with their own window and RoPE base,
partial rotary with longrope. Built from the config directly (the loaders' parity with transformers is
tests/checkpoints/test_gemma.py and test_phi_family.py)."""

from __future__ import annotations

from typing import Any

from model.config import TransformerConfig
from model.transformer import Transformer

GEMMA: dict[str, Any] = {"pos_encoding": "rope", "norm": "rmsnorm", "activation": "geglu_tanh", "bias": False,
                         "n_kv_heads": 2, "head_dim": 16, "post_norms": True, "score_scale_dim": 12.0,
                         "scale_embeddings": True, "sliding_window": 3, "window_layers": (0,)}
NEW_FAMILIES: dict[str, dict[str, Any]] = {
    # scores up to about 8 against a cap of 2, logits against 3: both caps bite
    "gemma2": {**GEMMA, "attn_softcap": 2.0, "logit_softcap": 3.0},
    "gemma3": {**GEMMA, "qk_norm": True, "rope_base": 1000.0, "rope_base_local": 50.0},
    # 4 of 8 dimensions turn; sequences past 6 tokens turn by the long factors, times 1.2
    "phi3": {"pos_encoding": "rope", "norm": "rmsnorm", "activation": "swiglu", "bias": False, "rope_dims": 4,
             "rope_freq_factors": (1.0, 2.0), "rope_long_freq_factors": (3.0, 5.0), "rope_original_context": 6,
             "rope_attention_factor": 1.2},
}


def new_family_model(name: str, **changes: Any) -> Transformer:
    """2 layers × 4 heads, d_model 32, vocabulary 40, weights of std 0.3 (so that the caps bite)."""
    fields = {**NEW_FAMILIES[name], **changes}
    cfg = TransformerConfig(vocab_size=40, d_model=32, n_layers=2, n_heads=4, n_ctx=64, seed=5, init_std=0.3, **fields)
    return Transformer(cfg).eval()
