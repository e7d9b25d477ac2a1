"""A GGUF file's metadata: read it, refuse what the loader does not implement, map it to a TransformerConfig.

Policy: a key under `{arch}.` is either used (it sets a config field), or checked to hold the one value
that changes nothing (`rope.scaling.type = "none"`, `expert_count = 0`, ...), or refused by name. A model
never loads with silently different numbers.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from checkpoints.base import CheckpointError
from model.config import TransformerConfig

SUPPORTED_ARCHITECTURES = ("llama", "mistral", "qwen2", "qwen3", "gpt2", "gemma2", "gemma3", "phi3")
GEMMA_ARCHITECTURES = frozenset({"gemma2", "gemma3"})
PERMUTED_ARCHITECTURES = frozenset({"llama", "mistral"})  # llama.cpp's converter permutes attn_q / attn_k rows
# RoPE tables are built for at most this many positions: a file that says more is read at this length, and
# model_meta says so (context_length, context_cap); 8192 keeps SmolLM2's own context (its file says 8192)
LONGEST_CONTEXT = 8192

# keys (after "{arch}.") that set a config field
USED_KEYS: dict[str, frozenset[str]] = {
    "llama": frozenset({
        "vocab_size", "context_length", "embedding_length", "block_count", "feed_forward_length",
        "attention.head_count", "attention.head_count_kv", "attention.layer_norm_rms_epsilon", "rope.freq_base",
    }),
    "gpt2": frozenset({
        "vocab_size", "context_length", "embedding_length", "block_count", "feed_forward_length",
        "attention.head_count", "attention.head_count_kv", "attention.layer_norm_epsilon",
    }),
}
USED_KEYS["mistral"] = USED_KEYS["qwen2"] = USED_KEYS["qwen3"] = USED_KEYS["llama"]
# Gemma: local (sliding-window) layers; Gemma 2 soft-caps scores and logits, Gemma 3's local layers have their own
# RoPE base (10000 unless rope.freq_base_swa says otherwise, as llama.cpp reads it)
USED_KEYS["gemma2"] = USED_KEYS["llama"] | {"attention.sliding_window", "attention.sliding_window_pattern",
                                            "attn_logit_softcapping", "final_logit_softcapping"}
USED_KEYS["gemma3"] = USED_KEYS["llama"] | {"attention.sliding_window", "attention.sliding_window_pattern",
                                            "rope.freq_base_swa"}
# one global layer every this many (llama.cpp's set_swa_pattern: layer i is local unless (i + 1) % n == 0)
GEMMA_SWA_PATTERN = {"gemma2": 2, "gemma3": 6}
# llama.cpp scales Gemma's queries by 1/√key_length, except in the 27B models (known by their block count), whose
# query_pre_attn_scalar is embedding_length / head_count (llama.cpp: f_attention_scale)
GEMMA_27B_BLOCKS = {"gemma2": 46, "gemma3": 62}
# phi3 (Phi-3, Phi-3.5-mini, Phi-4-mini): partial rotary (rope.dimension_count), a sliding window on every layer
# (0: none), and longrope's attention factor and original context (its factor sets are the tensors
# rope_factors_short / rope_factors_long)
USED_KEYS["phi3"] = USED_KEYS["llama"] | frozenset({
    "rope.dimension_count", "attention.sliding_window", "rope.scaling.attn_factor",
    "rope.scaling.original_context_length"})
# RoPE scaling types the loader implements: none, and linear (every pair rope.scaling.factor times slower). Llama
# 3.1's scaling has no key: llama.cpp's converter stores it as the tensor rope_freqs (one factor per pair)
ROPE_SCALING_TYPES = ("none", "linear")

# keys accepted only with the value that leaves the computation as implemented; what each one would change
NEUTRAL_VALUES: dict[str, tuple[tuple[Any, ...], str]] = {
    "rope.scaling.attn_factor": ((1.0,), "RoPE attention factor"),
    "expert_count": ((0,), "mixture of experts"),
    "expert_used_count": ((0,), "mixture of experts"),
    "attention.causal": ((True,), "non-causal attention"),
    "logit_scale": ((1.0,), "final logit scaling"),
    "attn_logit_softcapping": ((0.0,), "attention logit soft-capping"),
    "final_logit_softcapping": ((0.0,), "final logit soft-capping"),
    "embedding_scale": ((1.0,), "embedding scaling"),
    "residual_scale": ((1.0,), "residual scaling"),
    "use_parallel_residual": ((False,), "parallel attention/MLP residual"),
}
# keys whose value must equal the head size: anything else is partial rotary or a separate head size
HEAD_SIZE_KEYS = {
    "rope.dimension_count": "partial rotary embedding (RoPE on part of each head)",
    "attention.key_length": "a key/query head size other than the head size",
    "attention.value_length": "a value head size other than the key/query head size (attention.key_length)",
}
# informative for the scaling types implemented (llama.cpp reads them for YaRN only)
ROPE_SCALING_INFO = ("rope.scaling.original_context_length", "rope.scaling.finetuned")
# what some refused keys are, for the message
REFUSED_WHAT = {
    "attention.sliding_window": "sliding-window attention",
    "attention.sliding_window_pattern": "sliding-window attention",
    "rope.freq_base_swa": "sliding-window attention",
    "attention.scale": "attention scaling",
    "attention.clamp_kqv": "clamped Q/K/V",
    "attention.max_alibi_bias": "ALiBi",
    "rope.dimension_sections": "multimodal RoPE sections",
    "expert_shared_count": "mixture of experts",
    "expert_feed_forward_length": "mixture of experts",
}
IGNORED_PREFIXES = ("general.", "tokenizer.", "quantize.", "GGUF.")


def read_metadata(reader: Any, file_name: str) -> dict[str, Any]:
    """Every key/value of the file as Python values (strings, numbers, lists)."""
    metadata: dict[str, Any] = {}
    for name, field in reader.fields.items():
        try:
            metadata[name] = field.contents()
        except (UnicodeDecodeError, ValueError, IndexError) as error:
            raise CheckpointError(f"{file_name}: metadata key {name!r} is unreadable: {error}") from error
    if "general.architecture" not in metadata:
        raise CheckpointError(f"{file_name} has no general.architecture: not a model file")
    return metadata


def architecture(metadata: dict[str, Any]) -> str:
    arch = str(metadata.get("general.architecture"))
    if arch not in SUPPORTED_ARCHITECTURES:
        raise CheckpointError(
            f"unsupported architecture general.architecture = {arch!r}; supported: {', '.join(SUPPORTED_ARCHITECTURES)}"
        )
    kind = metadata.get("general.type", "model")
    if kind != "model":
        raise CheckpointError(f"general.type = {kind!r}: only model files are loaded (not adapters or projectors)")
    return arch


def check_understood(metadata: dict[str, Any]) -> None:
    """Refuse, naming the key, every metadata key that would change the computation and is not implemented."""
    arch = architecture(metadata)
    prefix = arch + "."
    head_size = _head_size(metadata, arch)
    scaling = metadata.get(prefix + "rope.scaling.type", "none")
    if scaling not in ROPE_SCALING_TYPES or (scaling != "none" and arch == "gpt2"):
        raise CheckpointError(f"{prefix}rope.scaling.type = {_shown(scaling)} (RoPE scaling) is not implemented "
                              f"(implemented: {', '.join(ROPE_SCALING_TYPES)}, and Llama 3.1's rope_freqs)")
    for key, value in metadata.items():
        if key.startswith(IGNORED_PREFIXES):
            continue
        if key.startswith("split."):
            raise CheckpointError(f"{key} = {value!r}: split GGUF files (one model in several files) are not supported")
        if not key.startswith(prefix):
            raise CheckpointError(f"metadata key {key} = {_shown(value)} is not understood by this loader")
        name = key[len(prefix):]
        if name in USED_KEYS[arch]:
            continue
        if name in NEUTRAL_VALUES:
            allowed, what = NEUTRAL_VALUES[name]
            if value not in allowed:
                raise CheckpointError(f"{key} = {_shown(value)} ({what}) is not implemented")
            continue
        if name in HEAD_SIZE_KEYS:
            if int(value) != head_size:
                raise CheckpointError(
                    f"{key} = {value}, but the head size is {head_size}: {HEAD_SIZE_KEYS[name]} is not implemented"
                )
            continue
        if name in ROPE_SCALING_INFO or name == "rope.scaling.type":
            continue
        if name == "rope.scaling.factor":
            if scaling != "linear" and value not in (0.0, 1.0):
                raise CheckpointError(f"{key} = {_shown(value)} (RoPE scaling) is not implemented without "
                                      f"{prefix}rope.scaling.type = 'linear'")
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise CheckpointError(f"{key} = {_shown(value)} (RoPE scaling) must be a number >= 0")
            continue
        what = REFUSED_WHAT.get(name, "a setting this loader does not implement")
        raise CheckpointError(f"{key} = {_shown(value)} ({what}) changes the computation and is not implemented")


def gguf_config(metadata: dict[str, Any], tied: bool, rope_freqs: tuple[float, ...] | None = None,
                longrope: tuple[tuple[float, ...], tuple[float, ...]] | None = None) -> TransformerConfig:
    """The TransformerConfig the metadata describes (after check_understood); rope_freqs: the file's rope_freqs
    tensor (one RoPE frequency factor per pair), if it has one; longrope: a phi3 file's (rope_factors_short,
    rope_factors_long) tensors, if it has them."""
    arch = architecture(metadata)

    def get(name: str, default: Any = None) -> Any:
        key = f"{arch}.{name}"
        if key in metadata:
            return metadata[key]
        if default is None:
            raise CheckpointError(f"the metadata has no {key}")
        return default

    d_model, n_heads = int(get("embedding_length")), int(get("attention.head_count"))
    tokens = metadata.get("tokenizer.ggml.tokens") or []
    common: dict[str, Any] = {
        "architecture": "decoder",
        "vocab_size": int(get("vocab_size", len(tokens) or None)),
        "d_model": d_model,
        "n_layers": int(get("block_count")),
        "n_heads": n_heads,
        "n_kv_heads": int(get("attention.head_count_kv", n_heads)),
        "n_ctx": int(get("context_length")),
        "norm_placement": "pre",
        "tied_embeddings": tied,
    }
    if arch == "gpt2":
        if _head_size(metadata, arch) * n_heads != d_model:
            raise CheckpointError(f"{arch}.attention.key_length = {_head_size(metadata, arch)}: a head size other "
                                  "than embedding_length / head_count is not implemented for gpt2")
        return TransformerConfig(
            **common, d_mlp=int(get("feed_forward_length", 4 * d_model)), pos_encoding="learned", norm="layernorm",
            norm_eps=float(get("attention.layer_norm_epsilon")), activation="gelu_tanh", bias=True,
        )
    common["n_ctx"] = min(common["n_ctx"], LONGEST_CONTEXT)
    head_size = _head_size(metadata, arch)
    if head_size * n_heads != d_model:
        common["head_dim"] = head_size
    if arch in GEMMA_ARCHITECTURES:
        return gemma_config(metadata, arch, common, head_size, rope_freqs)
    if arch == "phi3":
        return TransformerConfig(
            **common, d_mlp=int(get("feed_forward_length")), pos_encoding="rope",
            rope_base=float(get("rope.freq_base", 10000.0)), **phi3_rope(metadata, head_size, longrope),
            norm="rmsnorm", norm_eps=float(get("attention.layer_norm_rms_epsilon")), activation="swiglu", bias=False,
            sliding_window=int(get("attention.sliding_window", 0)) or None,
        )
    return TransformerConfig(
        **common, d_mlp=int(get("feed_forward_length")), pos_encoding="rope",
        rope_base=float(get("rope.freq_base", 10000.0)),
        rope_freq_factors=rope_factors(metadata, arch, head_size, rope_freqs), norm="rmsnorm",
        norm_eps=float(get("attention.layer_norm_rms_epsilon")), activation="swiglu", bias=False,
        qkv_bias=True if arch == "qwen2" else None, qk_norm=arch == "qwen3",
    )


def gemma_config(metadata: dict[str, Any], arch: str, common: dict[str, Any], head_size: int,
                 rope_freqs: tuple[float, ...] | None) -> TransformerConfig:
    """Gemma 2 / Gemma 3 as llama.cpp runs them: embeddings × √d_model, norms before and after each sub-layer
    (the file stores each gain 1 + w already), GeGLU with tanh GELU, local sliding-window layers (one global layer
    every 2 or 6), Gemma 2's soft caps, Gemma 3's q/k norm and the local layers' own unscaled RoPE base."""
    prefix = arch + "."

    def number(name: str, default: float | None = None) -> float:
        value = metadata.get(prefix + name, default)
        if value is None:
            raise CheckpointError(f"the metadata has no {prefix}{name}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise CheckpointError(f"{prefix}{name} = {_shown(value)} must be a number >= 0")
        return float(value)

    n_layers, n_heads, d_model = common["n_layers"], common["n_heads"], common["d_model"]
    window = int(number("attention.sliding_window", 0.0)) or None
    pattern = metadata.get(prefix + "attention.sliding_window_pattern")
    if pattern is None:
        every = GEMMA_SWA_PATTERN[arch]
        pattern = [(i + 1) % every != 0 for i in range(n_layers)]
    if not (isinstance(pattern, list) and len(pattern) == n_layers and all(isinstance(p, bool) for p in pattern)):
        raise CheckpointError(f"{prefix}attention.sliding_window_pattern = {_shown(pattern)} is not implemented "
                              f"(one true/false per layer, {n_layers} layers)")
    local = tuple(i for i, is_local in enumerate(pattern) if is_local) if window else ()
    rope_base = number("rope.freq_base", 10000.0)
    factors = rope_factors(metadata, arch, head_size, rope_freqs)
    local_base: float | None = number("rope.freq_base_swa", 10000.0) if arch == "gemma3" else None
    if local_base is not None and len(local) == n_layers:  # every layer local: theirs is the only RoPE
        rope_base, factors, local_base = local_base, None, None
    if not local:
        local_base = None
    scalar = d_model // n_heads if common["n_layers"] == GEMMA_27B_BLOCKS[arch] else head_size
    caps = {name: number(name) if arch == "gemma2" else 0.0
            for name in ("attn_logit_softcapping", "final_logit_softcapping")}
    return TransformerConfig(
        **common, d_mlp=int(number("feed_forward_length")), pos_encoding="rope", rope_base=rope_base,
        rope_freq_factors=factors, rope_base_local=local_base, norm="rmsnorm",
        norm_eps=number("attention.layer_norm_rms_epsilon"), qk_norm=arch == "gemma3", post_norms=True,
        attn_softcap=caps["attn_logit_softcapping"] or None, logit_softcap=caps["final_logit_softcapping"] or None,
        score_scale_dim=None if scalar == head_size else float(scalar), activation="geglu_tanh", bias=False,
        sliding_window=window if local else None,
        window_layers=(None if len(local) == n_layers else local) if local else None, scale_embeddings=True,
    )


def rope_factors(metadata: dict[str, Any], arch: str, d_head: int,
                 rope_freqs: tuple[float, ...] | None) -> tuple[float, ...] | None:
    """One RoPE frequency divisor per pair, as llama.cpp computes it: the rope_freqs tensor (Llama 3.1+), times
    the linear factor (rope.scaling.factor, 0 meaning 1); None when neither scales."""
    if rope_freqs is not None and len(rope_freqs) != d_head // 2:
        raise CheckpointError(f"tensor rope_freqs.weight has {len(rope_freqs)} factors, but a head of {d_head} "
                              f"dimensions has {d_head // 2} rotated pairs")
    linear = 1.0
    if metadata.get(f"{arch}.rope.scaling.type", "none") == "linear":
        linear = float(metadata.get(f"{arch}.rope.scaling.factor", 0.0)) or 1.0
    if rope_freqs is None and linear == 1.0:
        return None
    return tuple(linear * factor for factor in (rope_freqs or (1.0,) * (d_head // 2)))
def phi3_rope(metadata: dict[str, Any], d_head: int,
              longrope: tuple[tuple[float, ...], tuple[float, ...]] | None) -> dict[str, Any]:
    """A phi3 file's partial rotary and longrope as config fields, read as transformers reads the model's config:
    the short set up to rope.scaling.original_context_length tokens, the long set past it, cos and sin times
    rope.scaling.attn_factor (when the key is missing: √(1 + ln s / ln original), s = context_length / original,
    transformers' default; llama.cpp's converter always writes it)."""
    key = "phi3.rope.dimension_count"
    dims = int(metadata.get(key, d_head))
    if not 2 <= dims <= d_head or dims % 2:
        raise CheckpointError(f"{key} = {dims}: RoPE must turn an even number of dimensions, at most the head "
                              f"size {d_head}")
    fields: dict[str, Any] = {"rope_dims": dims} if dims != d_head else {}
    attention = metadata.get("phi3.rope.scaling.attn_factor")
    if longrope is None:
        if attention not in (None, 1.0):
            raise CheckpointError(f"phi3.rope.scaling.attn_factor = {_shown(attention)} (RoPE attention factor) "
                                  "without the tensors rope_factors_short and rope_factors_long is not implemented")
        return fields
    short, long = longrope
    for name, factors in (("rope_factors_short", short), ("rope_factors_long", long)):
        if len(factors) != dims // 2:
            raise CheckpointError(f"tensor {name}.weight has {len(factors)} factors, but {key} = {dims} turned "
                                  f"dimensions make {dims // 2} pairs")
    context = int(metadata["phi3.context_length"])
    original = int(metadata.get("phi3.rope.scaling.original_context_length", context))
    if original < 1:
        raise CheckpointError(f"phi3.rope.scaling.original_context_length = {original} must be at least 1")
    if attention is None:
        scale = context / original
        attention = 1.0 if scale <= 1.0 else math.sqrt(1 + math.log(scale) / math.log(original))
    if not (isinstance(attention, (int, float)) and math.isfinite(attention) and attention > 0):
        raise CheckpointError(f"phi3.rope.scaling.attn_factor = {_shown(attention)} must be a number above 0")
    return {**fields, "rope_freq_factors": short, "rope_long_freq_factors": long, "rope_original_context": original,
            "rope_attention_factor": float(attention)}


# Said of every file whose weights are not all float32: why llama.cpp (Ollama, LM Studio) shows slightly other
# probabilities than this site for the same file (the lab's quantization panel measures how far).
PRECISION_NOTE = ("Every number here is computed in float32 from the dequantized weights. llama.cpp (which Ollama and "
                  "LM Studio run) keeps the weights quantized and rounds the activations to 8 bits for its matrix "
                  "products, so its probabilities can differ slightly from these (the lab's quantization panel "
                  "measures by how much).")
PRECISION_NOTE_ZH = ("这里的每个数都是用反量化后的权重以 float32 计算的。"
                     "llama.cpp（Ollama 和 LM Studio 运行的就是它）让权重保持量化状态，"
                     "并在矩阵乘法前把激活值舍入到 8 位，所以它给出的概率可能与这里略有不同"
                     "（实验室的量化面板测量了差多少）。")
FULL_PRECISION = frozenset({"F32", "F64"})


def precision_note(tensor_types: Mapping[str, int]) -> tuple[str, str]:
    """(" " + the note in English, the note in Chinese), or ("", "") for a file whose tensors are all float32."""
    if set(tensor_types) <= FULL_PRECISION:
        return "", ""
    return " " + PRECISION_NOTE, PRECISION_NOTE_ZH


def model_meta(metadata: dict[str, Any], path: Path, tensor_types: Counter[str]) -> dict[str, Any]:
    """What the explorer shows about the file: its name, architecture, license, quantization."""
    arch = str(metadata["general.architecture"])
    name = str(metadata.get("general.name") or path.stem)
    types = ", ".join(f"{count} {kind}" for kind, count in tensor_types.most_common())
    note, note_zh = precision_note(tensor_types)
    meta: dict[str, Any] = {
        "description": f"{name}: a {arch} GGUF file ({path.name}), dequantized to float32 (tensors: {types}).{note}",
        "description_zh": f"{name}：一个 {arch} 结构的 GGUF 文件（{path.name}），"
                          f"已反量化为 float32（张量类型：{types}）。{note_zh}",
        "source": f"gguf:{path}",
        "gguf_architecture": arch,
        "tensor_types": dict(tensor_types),
    }
    context = metadata.get(f"{arch}.context_length")
    if isinstance(context, int):
        meta["context_length"] = context  # the model's own, as its file says
        if arch != "gpt2" and context > LONGEST_CONTEXT:
            meta["context_cap"] = LONGEST_CONTEXT
            meta["description"] += (f" Its file gives a context of {context} positions; this server reads at most "
                                    f"{LONGEST_CONTEXT} of them (n_ctx), to keep its RoPE tables small.")
            meta["description_zh"] += (f"文件中的上下文长度为 {context} 个位置；本服务器最多只读取其中 "
                                       f"{LONGEST_CONTEXT} 个（n_ctx），以免 RoPE 表过大。")
    for key, meta_key in (("general.license", "license"), ("general.languages", "language"),
                          ("general.name", "model_name"), ("general.size_label", "size_label")):
        if key in metadata:
            meta[meta_key] = metadata[key]
    return meta


def _head_size(metadata: dict[str, Any], arch: str) -> int:
    """attention.key_length when the file has it (heads of their own width: Qwen3-0.6B, Gemma), else
    embedding_length / head_count."""
    if f"{arch}.attention.key_length" in metadata:
        value = metadata[f"{arch}.attention.key_length"]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 1 << 16:
            raise CheckpointError(f"{arch}.attention.key_length = {_shown(value)} is not a usable head size")
        return value
    try:
        return int(metadata[f"{arch}.embedding_length"]) // int(metadata[f"{arch}.attention.head_count"])
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as error:
        raise CheckpointError(f"the metadata lacks a usable {arch}.embedding_length / head_count: {error}") from error


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
