"""Named model configs for `transformer-explorer train --config NAME` (or pass a JSON file)."""

from __future__ import annotations

from typing import Any

PRESETS: dict[str, dict[str, Any]] = {
    # the shipped default model: every modern choice a learner should see (RoPE, RMSNorm, SwiGLU, GQA)
    "tiny-gpt": dict(
        architecture="decoder",
        d_model=128,
        n_layers=3,
        n_heads=8,
        n_kv_heads=4,
        d_mlp=320,
        n_ctx=128,
        pos_encoding="rope",
        norm="rmsnorm",
        norm_placement="pre",
        activation="swiglu",
        bias=False,
        tied_embeddings=True,
    ),
    # tiny-gpt v2: the same modern choices, wider and deeper, on the v2 tokenizer (whole Chinese characters)
    # seconds-long smoke tests
    "tiny-test": dict(
        architecture="decoder",
        d_model=32,
        n_layers=2,
        n_heads=4,
        n_kv_heads=2,
        d_mlp=64,
        n_ctx=64,
        pos_encoding="rope",
        norm="rmsnorm",
        norm_placement="pre",
        activation="swiglu",
        bias=False,
    ),
}

# tiny-gpt v2: the same modern choices, wider and deeper, on the v2 tokenizer (whole Chinese characters)
PRESETS["tiny-gpt-v2"] = {
    **PRESETS["tiny-gpt"],
    **dict(d_model=192, n_layers=4, n_heads=6, n_kv_heads=2, d_mlp=512),
}

# tiny-deltanet: Qwen3.5's hybrid shape, small: three gated DeltaNet layers (model/deltanet.py) then one gated
# full-attention layer (q/k RMSNorm, RoPE on a quarter of each head, output gate), on tiny-gpt's tokenizer
# (--tokenizer-from model/weights/tiny-gpt). The recurrence runs token by token: train it on short rows (--context 64)
PRESETS["tiny-deltanet"] = dict(
    architecture="decoder",
    d_model=128,
    n_layers=4,
    n_heads=4,
    n_kv_heads=2,
    d_mlp=256,
    n_ctx=256,
    pos_encoding="rope",
    rope_dims=8,
    norm="rmsnorm",
    norm_placement="pre",
    norm_eps=1e-6,
    qk_norm=True,
    activation="swiglu",
    bias=False,
    tied_embeddings=True,
    deltanet_layers=[0, 1, 2],
    deltanet_key_heads=2,
    deltanet_value_heads=4,
    deltanet_key_dim=32,
    deltanet_value_dim=32,
    deltanet_conv=4,
    attn_output_gate=True,
)
