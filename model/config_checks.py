"""The checks of a config's per-layer fields, apart from model/config.py to keep it readable: Gemma 4's per-layer
shapes (global head sizes, shared K/V, per-layer widths and inputs), SmolLM3's NoPE layers, a mixture of experts
and Qwen3.5's DeltaNet layers. Each takes the config being built (typed Any: model/config.py imports this module,
not the other way round) and its `fail` (which raises ConfigError with the config's words)."""

from __future__ import annotations

from typing import Any


def check_layer_shapes(cfg: Any, fail: Any) -> None:
    """Gemma 4's per-layer shapes: global head sizes, shared K/V, per-layer MLP widths and inputs."""
    for name in ("head_dim_global", "kv_heads_global", "per_layer_input"):
        value = getattr(cfg, name)
        if value is not None and (not isinstance(value, int) or value < 1):
            fail(f"{name} must be at least 1, got {value!r}")
    per_layer = cfg.head_dim_global is not None or cfg.kv_heads_global is not None or cfg.k_eq_v
    if per_layer and cfg.architecture != "decoder":
        fail("head_dim_global, kv_heads_global and k_eq_v set the global layers of a decoder")
    if cfg.head_dim_global is not None and (cfg.head_dim_global % 2 or cfg.rope_dims is not None):
        fail(f"head_dim_global must be even (RoPE turns pairs) and goes without rope_dims, "
             f"got {cfg.head_dim_global}")
    if cfg.kv_heads_global is not None and cfg.n_heads % cfg.kv_heads_global:
        fail(f"n_heads ({cfg.n_heads}) must be divisible by kv_heads_global ({cfg.kv_heads_global})")
    for name in ("kv_source", "mlp_widths"):
        value = getattr(cfg, name)
        if value is None:
            continue
        object.__setattr__(cfg, name, tuple(int(v) for v in value))  # JSON gives a list
        if len(getattr(cfg, name)) != cfg.n_layers or cfg.architecture != "decoder":
            fail(f"{name} needs one entry per layer of a decoder ({cfg.n_layers}), got {list(value)}")
    for layer, width in enumerate(cfg.mlp_widths or ()):
        if width < 1:
            fail(f"mlp_widths[{layer}] must be at least 1, got {width}")
    for layer, source in enumerate(cfg.kv_source or ()):
        if not 0 <= source <= layer or cfg.kv_source_of(source) != source:
            fail(f"kv_source[{layer}] = {source}: a layer shares the K and V of itself or of an earlier layer "
                 "that computes its own")
        if (cfg.window_of(source), cfg.d_head_of(source), cfg.kv_heads_of(source)) != (
                cfg.window_of(layer), cfg.d_head_of(layer), cfg.kv_heads_of(layer)):
            fail(f"kv_source[{layer}] = {source}: layer {source} is of another kind (window, head size or "
                 "K/V heads)")
    if cfg.per_layer_input is not None and cfg.architecture != "decoder":
        fail("per_layer_input needs a decoder")


def check_layer_kinds(cfg: Any, fail: Any) -> None:
    """NoPE layers and mixture-of-experts layers: their lists name layers of the model's one stack."""
    for field in ("nope_layers", "moe_layers"):
        layers = getattr(cfg, field)
        if layers is None:
            continue
        try:
            object.__setattr__(cfg, field, tuple(sorted({int(layer) for layer in layers})))  # JSON gives a list
        except (TypeError, ValueError):
            fail(f"{field} must be a list of layer numbers, got {layers!r}")
        if cfg.architecture == "encoder-decoder":
            fail(f"{field} needs a model of one stack")
        if any(not 0 <= layer < cfg.n_layers for layer in getattr(cfg, field)):
            fail(f"{field} must name layers 0..{cfg.n_layers - 1}, got {list(layers)}")
    if cfg.nope_layers is not None and cfg.positional.where != "q_k":
        fail(f"nope_layers (layers without RoPE) needs a rotary encoding, not {cfg.pos_encoding!r}")
    if cfg.n_experts < 0 or cfg.n_experts_used < 0:
        fail("n_experts and n_experts_used must be at least 0")
    if cfg.n_experts == 0:
        if cfg.n_experts_used or cfg.expert_d_mlp is not None or cfg.moe_layers is not None \
                or cfg.expert_norm_topk or cfg.shared_expert_d_mlp is not None or cfg.experts_beside_mlp:
            fail("n_experts_used, expert_d_mlp, moe_layers, expert_norm_topk, shared_expert_d_mlp and "
                 "experts_beside_mlp need n_experts > 0")
        return
    if not 1 <= cfg.n_experts_used <= cfg.n_experts:
        fail(f"n_experts_used must be from 1 to n_experts = {cfg.n_experts}, got {cfg.n_experts_used}")
    for field in ("expert_d_mlp", "shared_expert_d_mlp"):
        if getattr(cfg, field) is not None and getattr(cfg, field) < 1:
            fail(f"{field} must be at least 1, got {getattr(cfg, field)}")
    if not cfg.gated:
        fail("experts are gated FFNs: activation must be one of swiglu, geglu, geglu_tanh, reglu, "
             f"got {cfg.activation!r}")
    if cfg.architecture == "encoder-decoder":
        fail("a mixture of experts needs a model of one stack")
    if cfg.experts_beside_mlp and (not cfg.post_norms or cfg.norm != "rmsnorm" or cfg.shared_expert_d_mlp is not None):
        fail("experts_beside_mlp (Gemma 4's MoE block) needs post_norms and RMSNorm, and no shared expert")


DELTANET_SIZES = ("deltanet_key_heads", "deltanet_value_heads", "deltanet_key_dim", "deltanet_value_dim",
                  "deltanet_conv")


def check_deltanet(cfg: Any, fail: Any) -> None:
    """The DeltaNet fields go together: layers inside the stack, every size at least 1, value heads a multiple of
    key heads (each key head serves value_heads / key_heads value heads), a decoder (the layer is causal)."""
    if cfg.deltanet_layers is None:
        given = [name for name in DELTANET_SIZES if getattr(cfg, name) is not None]
        if given:
            fail(f"{', '.join(given)} need deltanet_layers (the layers that are gated DeltaNet)")
        return
    object.__setattr__(cfg, "deltanet_layers", tuple(sorted(set(cfg.deltanet_layers))))  # JSON gives a list
    if cfg.architecture != "decoder" or cfg.norm_placement != "pre" or cfg.post_norms:
        fail("deltanet_layers (gated DeltaNet, a causal recurrence) need a decoder with norm_placement 'pre' and "
             "no post_norms")
    if any(not 0 <= layer < cfg.n_layers for layer in cfg.deltanet_layers):
        fail(f"deltanet_layers must name layers 0..{cfg.n_layers - 1}, got {list(cfg.deltanet_layers)}")
    for name in DELTANET_SIZES:
        value = getattr(cfg, name)
        if not isinstance(value, int) or value < 1:
            fail(f"{name} must be a whole number of at least 1 with deltanet_layers, got {value!r}")
    if cfg.deltanet_value_heads % cfg.deltanet_key_heads:  # type: ignore[operator]
        fail(f"deltanet_value_heads ({cfg.deltanet_value_heads}) must be a multiple of deltanet_key_heads "
             f"({cfg.deltanet_key_heads})")
