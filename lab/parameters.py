"""Parameters: counts per component; h heads of width d_model/h cost what one head of d_model costs;
MHA, GQA and MQA K/V counts.
"""

from __future__ import annotations

from typing import Any

import torch

from model.config import TransformerConfig
from model.layers import Attention
from model.transformer import Transformer, distinct_state_dict


def parameter_report(model: Transformer) -> dict[str, Any]:
    """Counts per component, and the sum of the saved state dict (every shared tensor once)."""
    counts = model.parameter_counts()
    state_total = sum(t.numel() for t in distinct_state_dict(model).values())
    blocks = counts["attention"] + counts["mlp"]
    return {"counts": counts, "state_dict_total": state_total,
            "ffn_share": counts["mlp"] / counts["total"] if counts["total"] else 0.0,
            "ffn_share_of_blocks": counts["mlp"] / blocks if blocks else 0.0}


def own_attention(model: Transformer) -> dict[str, Any]:
    """The model's first self-attention layer as it is (GQA where GQA), counted from its weights."""
    layer = model.attention_layers[0]
    cfg = model.cfg
    count = {name: sum(p.numel() for p in getattr(layer, name).parameters()) for name in ("W_Q", "W_K", "W_V", "W_O")}
    kind = "MHA" if cfg.kv_heads == cfg.n_heads else "MQA" if cfg.kv_heads == 1 else "GQA"
    return {"kind": kind, "n_heads": cfg.n_heads, "n_kv_heads": cfg.kv_heads, "d_head": cfg.d_head, **count,
            "kv": count["W_K"] + count["W_V"], "total": sum(count.values())}


# what a layer without positions or windows keeps of RoPE and local layers: nothing (they hold no parameters)
NO_POSITIONS: dict[str, Any] = {"sliding_window": None, "window_layers": None, "rope_base_local": None,
                                "rope_freq_factors": None, "rope_dims": None, "rope_long_freq_factors": None,
                                "rope_original_context": None, "rope_attention_factor": 1.0, "nope_layers": None}
# Gemma 4's per-layer attention shapes: the layer counted is one of its local layers (head_dim, n_kv_heads), with
# its own K and V (a layer sharing an earlier one's holds no W_K, W_V)
ONE_LAYER_SHAPE: dict[str, Any] = {"head_dim_global": None, "kv_heads_global": None, "kv_source": None,
                                   "k_eq_v": False, "mlp_widths": None, "per_layer_input": None}


def attention_counts(cfg: TransformerConfig, n_heads: int, n_kv_heads: int | None = None, *,
                     own_width: bool = True) -> dict[str, int]:
    """Parameters of one self-attention layer with n_heads heads of width d_model / n_heads (or of the model's own
    head width, head_dim, where it has one and own_width is set).

    Built on the meta device (nothing allocated). Positions are left out: RoPE and ALiBi have none.
    """
    width = {} if own_width else {"head_dim": None}
    changed = cfg.replace(n_heads=n_heads, n_kv_heads=n_kv_heads, pos_encoding="none", **NO_POSITIONS, **width,
                          **ONE_LAYER_SHAPE)
    with torch.device("meta"):
        layer = Attention(changed, causal=cfg.causal)
    count = {name: sum(p.numel() for p in getattr(layer, name).parameters()) for name in ("W_Q", "W_K", "W_V", "W_O")}
    return {**count, "kv": count["W_K"] + count["W_V"], "total": sum(count.values())}


def divisors(n: int, limit: int = 64) -> list[int]:
    return [h for h in range(1, min(n, limit) + 1) if n % h == 0]


def head_splits(cfg: TransformerConfig) -> list[dict[str, int]]:
    """One layer's attention parameters for every head count h dividing d_model (width d_model / h each).

    The textbook split even for a model whose heads have a width of their own (head_dim: Gemma, Qwen3): its own
    layer, own_attention(), is counted apart at that width."""
    return [{"n_heads": h, "d_head": cfg.d_model // h, **attention_counts(cfg, h, own_width=False)}
            for h in divisors(cfg.d_model) if h <= 64]


def kv_sharing(cfg: TransformerConfig) -> list[dict[str, Any]]:
    """MHA (a K/V head per query head), GQA (groups share one) and MQA (one K/V head): one layer's counts."""
    rows = []
    for kv in reversed(divisors(cfg.n_heads)):
        kind = "MHA" if kv == cfg.n_heads else "MQA" if kv == 1 else "GQA"
        rows.append({"kind": kind, "n_kv_heads": kv, **attention_counts(cfg, cfg.n_heads, kv)})
    return rows
