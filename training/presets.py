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
