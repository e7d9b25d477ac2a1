"""Small random models, one per way a head's scores are made (positions, GQA, ALiBi, encoder, window),
for the lab experiments that recompute one head and compare it with the model's own trace."""

from __future__ import annotations

from typing import Any

from model.config import TransformerConfig
from model.transformer import Transformer

HEAD_MODELS: dict[str, dict[str, Any]] = {
    "sinusoidal": {},
    "rope-gqa": {"pos_encoding": "rope", "n_kv_heads": 2},
    "alibi": {"pos_encoding": "alibi"},
    "alibi-encoder": {"pos_encoding": "alibi", "architecture": "encoder"},
    "window": {"pos_encoding": "learned", "sliding_window": 5},
}


def head_model(name: str) -> Transformer:
    """2 layers × 4 heads of 8, vocabulary 40, the changes HEAD_MODELS[name] names."""
    cfg = TransformerConfig(vocab_size=40, d_model=32, n_layers=2, n_heads=4, n_ctx=64, seed=2, **HEAD_MODELS[name])
    return Transformer(cfg).eval()
