"""What a KV cache costs: bytes for a model's shape, and the attention work it saves.

The byte arithmetic is the same for a shipped model and for a published one:

    bytes = 2 (K and V) · layers · kv_heads · d_head · bytes_per_value · context · batch

With GQA/MQA only the kv_heads are stored, so 8 KV heads serving 32 query heads cost ¼ of MHA.
A sliding window of W keys caps the context a layer ever needs to keep at W (Mistral).
"""

from __future__ import annotations

from dataclasses import dataclass

from model.config import TransformerConfig

DTYPE_BYTES: dict[str, int] = {"float32": 4, "float16": 2, "bfloat16": 2, "int8": 1, "fp8": 1}

@dataclass(frozen=True)
class CacheShape:
    """What fixes a model's KV-cache size."""

    name: str
    layers: int
    q_heads: int
    kv_heads: int
    d_head: int
    sliding_window: int | None = None
    note: str = ""

    @property
    def attention(self) -> str:
        if self.kv_heads == self.q_heads:
            return "MHA"
        return "MQA" if self.kv_heads == 1 else "GQA"


# Published shapes (from each model's paper / released config).
PUBLISHED: tuple[CacheShape, ...] = (
    CacheShape("GPT-3 175B", layers=96, q_heads=96, kv_heads=96, d_head=128, note="Brown et al. 2020"),
    CacheShape("Llama-2-7B", layers=32, q_heads=32, kv_heads=32, d_head=128, note="Touvron et al. 2023"),
    CacheShape("Llama-2-70B", layers=80, q_heads=64, kv_heads=8, d_head=128, note="GQA, 8 KV heads"),
    CacheShape("Llama-3-8B", layers=32, q_heads=32, kv_heads=8, d_head=128, note="GQA, 8 KV heads"),
    CacheShape(
        "Mistral-7B", layers=32, q_heads=32, kv_heads=8, d_head=128, sliding_window=4096,
        note="GQA, sliding window 4096 (rolling buffer)",
    ),
)


def dtype_bytes(dtype: str) -> int:
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"unknown dtype {dtype!r}; choose one of {', '.join(DTYPE_BYTES)}")
    return DTYPE_BYTES[dtype]


def cached_positions(shape: CacheShape, context: int) -> int:
    """How many positions each layer must keep: the context, capped by a sliding window."""
    return context if shape.sliding_window is None else min(context, shape.sliding_window)


def bytes_per_token(shape: CacheShape, dtype: str = "float16") -> int:
    """2 (K and V) · layers · kv_heads · d_head · bytes_per_value."""
    return 2 * shape.layers * shape.kv_heads * shape.d_head * dtype_bytes(dtype)


def cache_bytes(shape: CacheShape, *, context: int, batch: int = 1, dtype: str = "float16") -> int:
    """2 · layers · kv_heads · d_head · bytes · context · batch (context capped by a sliding window)."""
    if context < 0 or batch < 1:
        raise ValueError("context must be >= 0 and batch >= 1")
    return bytes_per_token(shape, dtype) * cached_positions(shape, context) * batch


def shape_of(name: str, cfg: TransformerConfig) -> CacheShape:
    """A model's cache shape: its decoder's self-attention layers (the ones that grow while decoding)."""
    layers = cfg.decoder_layers if cfg.architecture == "encoder-decoder" else cfg.n_layers
    return CacheShape(name, layers, cfg.n_heads, cfg.kv_heads, cfg.d_head, cfg.sliding_window)


def variants(shape: CacheShape) -> dict[str, CacheShape]:
    """The same model under MHA, GQA and MQA: kv_heads = q_heads, a divisor in between, 1.

    GQA takes 8 KV heads when that divides the query heads and is fewer of them (Llama's
    choice), else the largest proper divisor above 1; a model with too few heads has no GQA.
    """
    q = shape.q_heads
    out = {"MHA": _with_kv(shape, q)}
    divisors = [d for d in range(2, q) if q % d == 0]
    if divisors:
        out["GQA"] = _with_kv(shape, 8 if 8 in divisors else divisors[-1])
    out["MQA"] = _with_kv(shape, 1)
    return out


def _with_kv(shape: CacheShape, kv_heads: int) -> CacheShape:
    return CacheShape(shape.name, shape.layers, shape.q_heads, kv_heads, shape.d_head, shape.sliding_window, shape.note)


def kv_cache_table(
    shapes: list[CacheShape] | tuple[CacheShape, ...], *, context: int, batch: int = 1, dtype: str = "float16"
) -> list[dict[str, object]]:
    """One row per shape: its numbers, bytes per token and bytes in total."""
    return [
        {
            "name": s.name,
            "attention": s.attention,
            "layers": s.layers,
            "q_heads": s.q_heads,
            "kv_heads": s.kv_heads,
            "d_head": s.d_head,
            "sliding_window": s.sliding_window,
            "cached_positions": cached_positions(s, context),
            "bytes_per_token": bytes_per_token(s, dtype),
            "total_bytes": cache_bytes(s, context=context, batch=batch, dtype=dtype),
            "note": s.note,
        }
        for s in shapes
    ]


# ---------------------------------------------------------------- work saved


def recomputed_score_cells(cfg: TransformerConfig, prompt_len: int, new_tokens: int) -> int:
    """Attention scores computed decoding without a cache: every step re-scores the whole sequence.

    Step t (sequence length n_t) costs n_t² cells per head per layer; a cache makes it n_t.
    """
    layers = cfg.decoder_layers if cfg.architecture == "encoder-decoder" else cfg.n_layers
    lengths = range(prompt_len, prompt_len + new_tokens)
    return sum(n * n for n in lengths) * cfg.n_heads * layers


def cached_score_cells(cfg: TransformerConfig, prompt_len: int, new_tokens: int) -> int:
    """The same decoding with a cache: the prompt once (prompt_len²), then one query row per step."""
    layers = cfg.decoder_layers if cfg.architecture == "encoder-decoder" else cfg.n_layers
    later = range(prompt_len + 1, prompt_len + new_tokens)
    return (prompt_len * prompt_len + sum(later)) * cfg.n_heads * layers
