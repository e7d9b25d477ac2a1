"""What the lab's step-by-step re-computations do not reproduce: the parts of Gemma 4's forward pass that an
experiment redoing the model's math outside that pass (reading one layer's q, k and v, resuming a pass from the
residual stream, splitting the logit into parts) does not implement. Such an experiment refuses the model, naming
them; the forward pass itself (the explorer, the logit lens, decoding) has them all."""

from __future__ import annotations

from model.config import TransformerConfig


def not_reproduced(cfg: TransformerConfig) -> list[str]:
    """The model's features, in words, that the lab's own re-computations leave out (empty: none)."""
    out = []
    if cfg.per_layer_input is not None:
        out.append(f"the per-layer input embedding ({cfg.per_layer_input} numbers per layer) each block adds")
    shared = [layer for layer in range(cfg.n_layers) if cfg.kv_source_of(layer) != layer]
    if shared:
        sources = sorted({cfg.kv_source_of(layer) for layer in shared})
        out.append(f"K and V shared across layers (layers {', '.join(map(str, shared))} attend with those of "
                   f"layers {', '.join(map(str, sources))})")
    if cfg.k_eq_v:
        out.append("K = V in the global layers")
    if cfg.head_dim_global is not None or cfg.kv_heads_global is not None:
        out.append(f"global layers with heads of their own ({cfg.d_head_of(cfg.n_layers - 1)} wide, "
                   f"{cfg.kv_heads_of(cfg.n_layers - 1)} K/V heads)")
    if cfg.v_norm:
        out.append("the RMSNorm on each head's v")
    if cfg.layer_scalar:
        out.append("the learned scalar each layer's output is multiplied by")
    if cfg.experts_beside_mlp:
        out.append(f"the mixture of experts beside each FFN ({cfg.n_experts} experts, {cfg.n_experts_used} chosen, "
                   "its router reading the stream through a norm and scales of its own)")
    return out


def refusal(cfg: TransformerConfig, experiment: str) -> str | None:
    """The sentence that refuses `experiment` on this model, or None when it reproduces the model exactly."""
    missing = not_reproduced(cfg)
    if not missing:
        return None
    return (f"{experiment} redoes this model's math outside its forward pass and does not implement "
            f"{'; '.join(missing)} (Gemma 4); the explorer's trace shows each of them")
