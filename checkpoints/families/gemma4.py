"""Gemma 4 (text): the Gemma 3 layout (a norm before and after each sub-layer, q/k norms, local sliding-window layers
with their own RoPE base, one global layer every few) and what Gemma 4 adds:

    scores      q·kᵀ (no ÷ √d_head: the q and k norms set the scale); v is RMS-normed too, without a gain
    global      their own head width (global_head_dim) and K/V heads; RoPE on a quarter of each head's pairs
                ("proportional": the other pairs' frequencies are 0, stored as llama.cpp does, factors of 1e30)
    K = V       attention_k_eq_v: a global layer's V is its key projection (before the k norm and RoPE)
    shared K/V  the last num_kv_shared_layers layers attend with the K and V of the last earlier layer of their
                kind, and (use_double_wide_mlp) have an FFN twice as wide
    per layer   a per-layer input embedding gated into the stream after each FFN (model/per_layer_inputs.py)
    scalar      each layer's output times a learned scalar;  logits soft-capped (final_logit_softcapping)

Norm weights are the gains themselves (Gemma4RMSNorm multiplies by w, not 1 + w). The mixture-of-experts block
(enable_moe_block: Gemma 4 26B-A4B) runs beside each layer's FFN (model/moe.py FfnBesideExperts): num_experts of
moe_intermediate_size, top_k_experts chosen, renormalised and scaled per expert; its router reads the stream through
an RMSNorm without gain, times router.scale / √hidden_size. In GGUF files (expert_count above 0) every layer has it:
ffn_gate_inp (.weight, and .scale: router.scale), ffn_gate_up_exps, ffn_down_exps (.scale: per_expert_scale),
pre_ffw_norm_2, post_ffw_norm_1, post_ffw_norm_2, as llama.cpp's gemma4 graph reads them.
Hugging Face `gemma4_text` (Gemma4ForCausalLM); GGUF `gemma4` as llama.cpp's converter writes it (per-layer K/V
heads and FFN widths as arrays, the global head size in attention.key_length, the local one in
attention.key_length_swa).
"""

from __future__ import annotations

from typing import Any

from checkpoints.base import CheckpointError, ConfigFields, StateDict
from checkpoints.experts import split_fused
from checkpoints.families.gemma2 import GGUF_KEYS
from checkpoints.families.records import GgufFamily, HfFamily
from checkpoints.gguf_read import GgufRead, shown
from checkpoints.gguf_tensors import ROPE_FREQS, ModelTensors, Shapes, outside_blocks
from checkpoints.hf_common import GENERIC_FIELDS, activation, loader_name, strip_prefix, take
from checkpoints.hf_rope import rope_settings
from model.config import TransformerConfig

UNTURNED = 1e30  # a RoPE pair's frequency divisor that leaves it unturned (llama.cpp's rope_freqs for Gemma 4)
KINDS = ("full_attention", "sliding_attention")
MOE = ("enable_moe_block", "num_experts", "top_k_experts", "moe_intermediate_size")

HF_FIELDS = GENERIC_FIELDS | ConfigFields(
    read=frozenset({
        "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
        "num_key_value_heads", "head_dim", "hidden_activation", "max_position_embeddings", "rms_norm_eps",
        "rope_parameters", "sliding_window", "layer_types", "final_logit_softcapping", "vocab_size_per_layer_input",
        "hidden_size_per_layer_input", "attention_k_eq_v", "num_kv_shared_layers", "use_double_wide_mlp",
        "global_head_dim", "num_global_key_value_heads", "per_layer_config",
        "enable_moe_block", "num_experts", "top_k_experts", "moe_intermediate_size",
    }),
    inert=frozenset({"attention_dropout"}),
    # not implemented, accepted at the value that leaves them out: the MoE block (26B-A4B), biases, an encoder
    defaults={"attention_bias": False, "use_bidirectional_attention": None},
)


def refuse(loader: str, field: str, value: Any, why: str) -> CheckpointError:
    return CheckpointError(f"{loader}: config field {field} = {value!r} ({why}) is not implemented")


def global_shapes(hf_config: dict[str, Any], types: list[str], loader: str) -> tuple[int, int | None]:
    """(the global layers' head width, their K/V heads or None: the local ones'), from global_head_dim and
    num_global_key_value_heads (read only with attention_k_eq_v, as transformers does) or, as transformers writes
    config.json, per_layer_config: the same overrides for every full-attention layer and none for the others."""
    overrides = hf_config.get("per_layer_config")
    if overrides is None:
        kv = hf_config.get("num_global_key_value_heads") if hf_config.get("attention_k_eq_v", False) else None
        return int(hf_config.get("global_head_dim", 512)), kv
    if not isinstance(overrides, dict):
        raise refuse(loader, "per_layer_config", overrides, "per-layer shapes other than the global layers'")
    by_layer = {int(layer): value for layer, value in overrides.items()}  # a layer without one: the defaults
    wanted = [by_layer.get(i) or {} for i, kind in enumerate(types) if kind == "full_attention"]
    local = [by_layer.get(i) for i, kind in enumerate(types) if kind != "full_attention"]
    first = wanted[0] if wanted else {}
    if any(local) or any(v != first for v in wanted) or not isinstance(first, dict) or \
            set(first) - {"head_dim", "num_key_value_heads"}:
        raise refuse(loader, "per_layer_config", overrides, "per-layer shapes other than the global layers'")
    return int(first.get("head_dim", hf_config.get("head_dim", 256))), first.get("num_key_value_heads")


def kv_sources(types: list[str], shared: int, loader: str) -> tuple[int, ...] | None:
    """transformers' kv_sharing_modes: from layer n_layers - shared on, each layer attends with the K and V of the
    last earlier layer of its kind (None when no layer shares)."""
    n_layers = len(types)
    if not shared:
        return None
    first = n_layers - shared
    producers = {kind: max((i for i in range(first) if types[i] == kind), default=None) for kind in set(types)}
    if shared < 0 or first < 1 or None in producers.values():
        raise refuse(loader, "num_kv_shared_layers", shared, "layers sharing K/V with no earlier layer of their kind")
    return tuple(i if i < first else producers[types[i]] for i, _ in enumerate(types))  # type: ignore[misc]


def global_rope(params: dict[str, Any], head_dim: int, loader: str) -> tuple[float, tuple[float, ...] | None]:
    """The global layers' RoPE: "proportional" turns the first partial_rotary_factor of the pairs (frequencies
    over the whole head), each `factor` times slower; the other pairs stay unturned."""
    kind = params.get("rope_type", "default")
    if kind == "default":
        return rope_settings({"rope_parameters": params}, loader, head_dim)
    if kind != "proportional":
        raise refuse(loader, "rope_parameters.full_attention.rope_type", kind, "RoPE scaling")
    unknown = set(params) - {"rope_type", "rope_theta", "partial_rotary_factor", "factor"}
    if unknown:
        raise refuse(loader, f"rope_parameters.full_attention.{sorted(unknown)[0]}", params[sorted(unknown)[0]],
                     "RoPE scaling")
    turned = int(float(params.get("partial_rotary_factor", 1.0)) * head_dim // 2)
    factor = float(params.get("factor", 1.0))
    return float(params.get("rope_theta", 1_000_000.0)), (factor,) * turned + (UNTURNED,) * (head_dim // 2 - turned)


def convert_hf(hf_config: dict[str, Any], state: StateDict) -> tuple[TransformerConfig, StateDict]:
    """A Gemma 4 text directory (transformers' Gemma4ForCausalLM): its config and weights."""
    loader = loader_name(str(hf_config.get("model_type")))
    state = strip_prefix(state, ("model.language_model.", "model."))
    d_model, n_heads, n_layers = hf_config["hidden_size"], hf_config["num_attention_heads"], \
        hf_config["num_hidden_layers"]
    head_dim = int(hf_config.get("head_dim", 256))
    types = list(hf_config.get("layer_types") or [
        "sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(n_layers)])
    if len(types) != n_layers or set(types) - set(KINDS):
        raise refuse(loader, "layer_types", types, "attention kinds other than full and sliding")
    types[-1] = "full_attention"  # transformers forces the last layer global
    local = tuple(i for i, kind in enumerate(types) if kind == "sliding_attention")
    global_dim, global_kv = global_shapes(hf_config, types, loader)
    params = hf_config.get("rope_parameters") or {}
    if not isinstance(params, dict) or set(params) - set(KINDS):
        raise refuse(loader, "rope_parameters", params, "RoPE parameters other than one set per layer kind")
    full = params.get("full_attention") or {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                            "rope_theta": 1_000_000.0}
    sliding = params.get("sliding_attention") or {"rope_type": "default", "rope_theta": 10_000.0}
    if sliding.get("rope_type", "default") != "default" or sliding.get("partial_rotary_factor", 1.0) != 1.0:
        raise refuse(loader, "rope_parameters.sliding_attention", sliding, "RoPE scaling on the local layers")
    rope_base, factors = global_rope(full, global_dim, loader)
    local_base: float | None = float(sliding.get("rope_theta", 10_000.0))
    sources = kv_sources(types, int(hf_config.get("num_kv_shared_layers", 0)), loader)
    width = int(hf_config["intermediate_size"])
    widths = tuple(2 * width if hf_config.get("use_double_wide_mlp") and sources and sources[i] != i else width
                   for i in range(n_layers))
    per_layer = hf_config.get("hidden_size_per_layer_input") or None
    if per_layer and hf_config.get("vocab_size_per_layer_input", hf_config["vocab_size"]) != hf_config["vocab_size"]:
        raise refuse(loader, "vocab_size_per_layer_input", hf_config["vocab_size_per_layer_input"],
                     "a per-layer vocabulary other than the model's")
    act = activation(hf_config, "hidden_activation", "gelu_pytorch_tanh", gated=True)
    if act != "geglu_tanh":  # the per-layer input's gate uses the same function, implemented as tanh GELU only
        raise refuse(loader, "hidden_activation", hf_config["hidden_activation"], "an activation other than tanh GELU")
    n_kv = hf_config.get("num_key_value_heads") or n_heads
    if not local:  # every layer global: theirs are the only head sizes and RoPE
        head_dim, n_kv, local_base = global_dim, global_kv or n_kv, None
    cfg = TransformerConfig(
        architecture="decoder", vocab_size=hf_config["vocab_size"], d_model=d_model, n_layers=n_layers,
        n_heads=n_heads, n_kv_heads=n_kv, head_dim=None if head_dim * n_heads == d_model else head_dim, d_mlp=width,
        n_ctx=min(int(hf_config.get("max_position_embeddings", 8192)), 4096), pos_encoding="rope",
        rope_base=rope_base, rope_freq_factors=factors, rope_base_local=local_base, norm="rmsnorm",
        norm_eps=hf_config.get("rms_norm_eps", 1e-6), qk_norm=True, post_norms=True,
        logit_softcap=hf_config.get("final_logit_softcapping") or None, score_scale_dim=1.0, activation=act,
        bias=False, tied_embeddings=bool(hf_config.get("tie_word_embeddings", True)) or "lm_head.weight" not in state,
        sliding_window=int(hf_config.get("sliding_window", 512)) if local else None,
        window_layers=local or None, scale_embeddings=True,
        head_dim_global=global_dim if local else None, kv_heads_global=global_kv if local else None,
        kv_source=sources, k_eq_v=bool(hf_config.get("attention_k_eq_v", False)), v_norm=True,
        mlp_widths=widths if len(set(widths)) > 1 else None, per_layer_input=per_layer, layer_scalar=True,
        **moe_block(hf_config, loader),
    )
    return cfg, hf_weights(cfg, state)


def moe_block(hf_config: dict[str, Any], loader: str) -> dict[str, Any]:
    """enable_moe_block: experts beside the FFN in every layer (num_experts, top_k_experts, moe_intermediate_size
    read only with it, as transformers does)."""
    if not hf_config.get("enable_moe_block"):
        return {}
    fields = {name: hf_config.get(name) for name in MOE[1:]}
    for name, value in fields.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise refuse(loader, name, value, "a mixture-of-experts block needs a whole number >= 1")
    return {"n_experts": fields["num_experts"], "n_experts_used": fields["top_k_experts"],
            "expert_d_mlp": fields["moe_intermediate_size"], "expert_norm_topk": True, "experts_beside_mlp": True}


# Gemma 4's MoE block, Hugging Face names -> ours (model/moe.py FfnBesideExperts)
MOE_NAMES = {"router.proj.weight": "W_router.weight", "router.scale": "router_scale",
             "router.per_expert_scale": "per_expert_scale", "post_feedforward_layernorm_1.weight": "norm_dense_w",
             "pre_feedforward_layernorm_2.weight": "norm_experts_in_w",
             "post_feedforward_layernorm_2.weight": "norm_experts_out_w"}


def hf_moe_weights(cfg: TransformerConfig, state: StateDict, layer: int) -> StateDict:
    """One layer's router, its scales, the three norms and the experts (gate_up_proj: gate rows, then up rows)."""
    hf, ours = f"layers.{layer}.", f"stack.blocks.{layer}.mlp."
    out = {ours + name: take(state, hf + hf_name) for hf_name, name in MOE_NAMES.items()}
    gate_up, down = take(state, hf + "experts.gate_up_proj"), take(state, hf + "experts.down_proj")
    return out | split_fused(gate_up, down, cfg, ours, hf + "experts.")


def hf_weights(cfg: TransformerConfig, state: StateDict) -> StateDict:
    """Hugging Face names -> ours. A layer that shares K/V has no K/V weights of its own (a file may still hold
    some, which transformers ignores too)."""
    out: StateDict = {"stack.embed.W_E.weight": take(state, "embed_tokens.weight"),
                      "stack.ln_final.w": take(state, "norm.weight")}
    if cfg.per_layer_input is not None:
        out |= {"stack.per_layer_inputs.W_E.weight": take(state, "embed_tokens_per_layer.weight"),
                "stack.per_layer_inputs.W_proj.weight": take(state, "per_layer_model_projection.weight"),
                "stack.per_layer_inputs.w": take(state, "per_layer_projection_norm.weight")}
    names = {"input_layernorm": "ln1.w", "post_attention_layernorm": "ln1_post.w",
             "pre_feedforward_layernorm": "ln2.w", "post_feedforward_layernorm": "ln2_post.w",
             "self_attn.q_proj.weight": "attn.W_Q.weight", "self_attn.o_proj.weight": "attn.W_O.weight",
             "self_attn.q_norm": "attn.q_norm_w", "mlp.gate_proj.weight": "mlp.W_gate.weight",
             "mlp.up_proj.weight": "mlp.W_in.weight", "mlp.down_proj.weight": "mlp.W_out.weight",
             "layer_scalar": "layer_scalar"}
    if cfg.per_layer_input is not None:
        names |= {"per_layer_input_gate.weight": "pli.W_gate.weight", "per_layer_projection.weight": "pli.W_up.weight",
                  "post_per_layer_input_norm": "ln_pli.w"}
    for layer in range(cfg.n_layers):
        own = dict(names)
        if cfg.kv_source_of(layer) == layer:
            own |= {"self_attn.k_proj.weight": "attn.W_K.weight", "self_attn.k_norm": "attn.k_norm_w"}
            if not cfg.k_is_v(layer):
                own["self_attn.v_proj.weight"] = "attn.W_V.weight"
        for hf_name, ours in own.items():
            hf_name += "" if hf_name.endswith((".weight", "layer_scalar")) else ".weight"
            out[f"stack.blocks.{layer}.{ours}"] = take(state, f"layers.{layer}.{hf_name}")
        if cfg.experts_beside_mlp:
            out |= hf_moe_weights(cfg, state, layer)
    if not cfg.tied_embeddings:
        out["W_U.weight"] = take(state, "lm_head.weight")
    return out


# ---------------------------------------------------------------- GGUF

GGUF_NAMES = {"attn_norm": "ln1.w", "post_attention_norm": "ln1_post.w", "ffn_norm": "ln2.w",
              "post_ffw_norm": "ln2_post.w", "attn_q": "attn.W_Q.weight", "attn_output": "attn.W_O.weight",
              "attn_q_norm": "attn.q_norm_w", "ffn_gate": "mlp.W_gate.weight", "ffn_up": "mlp.W_in.weight",
              "ffn_down": "mlp.W_out.weight"}
PER_LAYER_NAMES = {"inp_gate": "pli.W_gate.weight", "proj": "pli.W_up.weight", "post_norm": "ln_pli.w"}


def per_layer_values(read: GgufRead, key: str, n_layers: int, default: Any = None) -> list[int]:
    """A key llama.cpp writes as one number or as one per layer (head_count_kv, feed_forward_length)."""
    value = read.get(key, default)
    values = value if isinstance(value, list) else [value] * n_layers
    if len(values) != n_layers or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values):
        raise CheckpointError(f"{read.prefix}{key} = {shown(value)} must be a number above 0 or one per layer")
    return values


def gguf_config(read: GgufRead) -> TransformerConfig:
    """A Gemma 4 file as llama.cpp runs it: K = V where a global layer has no attn_v, the shared layers from
    attention.shared_kv_layers, the global layers' RoPE factors from rope_freqs."""
    n_layers, d_model, n_heads = (int(read.get(k)) for k in ("block_count", "embedding_length", "attention.head_count"))
    pattern = read.get("attention.sliding_window_pattern")
    if not (isinstance(pattern, list) and len(pattern) == n_layers and all(isinstance(p, bool) for p in pattern)):
        raise CheckpointError(f"{read.prefix}attention.sliding_window_pattern = {shown(pattern)} is not implemented "
                              f"(one true/false per layer, {n_layers} layers)")
    local = tuple(i for i, is_local in enumerate(pattern) if is_local)
    kv, widths = (per_layer_values(read, k, n_layers, n_heads if k.endswith("kv") else None)
                  for k in ("attention.head_count_kv", "feed_forward_length"))
    head_global, head_local = int(read.number("attention.key_length")), int(read.number("attention.key_length_swa"))
    for key, want in (("attention.value_length", head_global), ("rope.dimension_count", head_global),
                      ("attention.value_length_swa", head_local), ("rope.dimension_count_swa", head_local)):
        if int(read.number(key, want)) != want:
            raise CheckpointError(f"{read.prefix}{key} = {read.get(key)} (a head size or partial rotary other than "
                                  f"llama.cpp's Gemma 4) is not implemented")
    kinds = ["sliding_attention" if p else "full_attention" for p in pattern]
    sources = kv_sources(kinds, int(read.number("attention.shared_kv_layers", 0.0)),
                         f"the GGUF {read.arch} loader ({read.prefix}attention.shared_kv_layers)")
    kv_local, kv_global = ({kv[i] for i in range(n_layers) if pattern[i] == want} for want in (True, False))
    if len(kv_local) > 1 or len(kv_global) > 1:
        raise CheckpointError(f"{read.prefix}attention.head_count_kv = {shown(kv)}: K/V heads that differ "
                              "between layers of one kind are not implemented")
    producers = [i for i in range(n_layers) if not pattern[i] and (sources is None or sources[i] == i)]
    no_v = {f"blk.{i}.attn_v.weight" not in read.tensor_names for i in producers}
    if len(no_v) > 1:
        raise CheckpointError("some global layers have attn_v and others not: K = V in only some is not implemented")
    per_layer = int(read.number("embedding_length_per_layer_input", 0.0)) or None
    return TransformerConfig(
        architecture="decoder", vocab_size=int(read.get("vocab_size", len(read.metadata["tokenizer.ggml.tokens"]))),
        d_model=d_model, n_layers=n_layers, n_heads=n_heads, n_kv_heads=min(kv_local or kv_global),
        head_dim=None if head_local * n_heads == d_model else head_local,
        n_ctx=min(int(read.get("context_length")), read.context_cap or 4096), d_mlp=min(widths),
        pos_encoding="rope", rope_base=read.number("rope.freq_base", 10000.0),
        rope_freq_factors=read.rope_factors(head_global, ROPE_FREQS), rope_base_local=read.number(
            "rope.freq_base_swa", 10000.0), norm="rmsnorm", norm_eps=read.number("attention.layer_norm_rms_epsilon"),
        qk_norm=True, post_norms=True, logit_softcap=read.number("final_logit_softcapping", 0.0) or None,
        score_scale_dim=1.0, activation="geglu_tanh", bias=False, tied_embeddings=read.tied,
        sliding_window=int(read.number("attention.sliding_window")), window_layers=local,
        scale_embeddings=True, head_dim_global=head_global, kv_heads_global=min(kv_global),
        kv_source=sources, k_eq_v=no_v == {True}, v_norm=True,
        mlp_widths=tuple(widths) if len(set(widths)) > 1 else None, per_layer_input=per_layer,
        layer_scalar=f"blk.{n_layers - 1}.layer_output_scale.weight" in read.tensor_names, **gguf_moe_block(read),
    )


def gguf_moe_block(read: GgufRead) -> dict[str, Any]:
    """expert_count experts beside the FFN of every layer (llama.cpp: renormalised softmax weights, each times its
    expert's scale ffn_down_exps.scale)."""
    if not int(read.number("expert_count", 0.0)):
        for key in ("expert_used_count", "expert_feed_forward_length"):  # experts described, but none counted
            if read.metadata.get(read.prefix + key):
                raise CheckpointError(f"{read.prefix}{key} = {shown(read.get(key))} (mixture of experts) without "
                                      f"{read.prefix}expert_count is not implemented")
        return {}
    return {"n_experts": int(read.number("expert_count")), "n_experts_used": int(read.number("expert_used_count")),
            "expert_d_mlp": int(read.number("expert_feed_forward_length")), "expert_norm_topk": True,
            "experts_beside_mlp": True}


def layer_shapes(cfg: TransformerConfig, layer: int) -> Shapes:
    """The shapes of one block's tensors (torch order): its own head width, K/V heads and FFN width."""
    d, d_head, mlp, pli = cfg.d_model, cfg.d_head_of(layer), cfg.mlp_width_of(layer), cfg.per_layer_input or 0
    q, kv = cfg.n_heads * d_head, cfg.kv_heads_of(layer) * d_head
    why = f"layer {layer}: head width {d_head}, K/V heads {cfg.kv_heads_of(layer)}, FFN width {mlp}"
    return {"attn_q.weight": ((q, d), why), "attn_k.weight": ((kv, d), why), "attn_v.weight": ((kv, d), why),
            "attn_output.weight": ((d, q), why), "attn_q_norm.weight": ((d_head,), why),
            "attn_k_norm.weight": ((d_head,), why), "ffn_gate.weight": ((mlp, d), why),
            "ffn_up.weight": ((mlp, d), why), "ffn_down.weight": ((d, mlp), why),
            "inp_gate.weight": ((pli, d), why), "proj.weight": ((d, pli), why), "post_norm.weight": ((d,), why),
            "layer_output_scale.weight": ((1,), why)} | moe_shapes(cfg)


def moe_shapes(cfg: TransformerConfig) -> Shapes:
    """The MoE block's tensors (torch order), as expert_count, expert_feed_forward_length and the width fix them."""
    n, width, d = cfg.n_experts, cfg.expert_width, cfg.d_model
    why = f"expert_count {n}, expert_feed_forward_length {width}, embedding_length {d}"
    return {"ffn_gate_inp.weight": ((n, d), why), "ffn_gate_inp.scale": ((d,), why),
            "ffn_gate_up_exps.weight": ((n, 2 * width, d), why), "ffn_down_exps.weight": ((n, d, width), why),
            "ffn_down_exps.scale": ((n,), why), **{f"{norm}.weight": ((d,), why) for norm in GGUF_MOE_NORMS}
            } if cfg.experts_beside_mlp else {}


def gguf_shapes(cfg: TransformerConfig, shapes: Shapes) -> Shapes:
    """Outside the blocks: the per-layer input tables, and one RoPE factor per pair of a global head."""
    rows, pli = cfg.n_layers * (cfg.per_layer_input or 0), f"embedding_length_per_layer_input {cfg.per_layer_input}"
    return shapes | {"per_layer_token_embd.weight": ((cfg.vocab_size, rows), pli),
                     "per_layer_model_proj.weight": ((rows, cfg.d_model), pli),
                     "per_layer_proj_norm.weight": ((cfg.per_layer_input or 0,), pli),
                     ROPE_FREQS: ((cfg.d_head_of(cfg.n_layers - 1) // 2,), "attention.key_length / 2")}


def convert_gguf(cfg: TransformerConfig, source: ModelTensors) -> StateDict:
    """Gemma 4 tensor names -> ours (Q/K rows unpermuted; norms stored as their gains, as Gemma 4 applies them)."""
    out: StateDict = {"stack.embed.W_E.weight": source.get("token_embd.weight")}
    if cfg.per_layer_input is not None:
        out |= {"stack.per_layer_inputs.W_E.weight": source.get("per_layer_token_embd.weight"),
                "stack.per_layer_inputs.W_proj.weight": source.get("per_layer_model_proj.weight"),
                "stack.per_layer_inputs.w": source.get("per_layer_proj_norm.weight")}
    outside = source.shapes
    for layer in range(cfg.n_layers):
        source.shapes = outside | layer_shapes(cfg, layer)  # each block's tensors checked against its own shapes
        names = dict(GGUF_NAMES) | (PER_LAYER_NAMES if cfg.per_layer_input is not None else {})
        if cfg.kv_source_of(layer) == layer:
            names |= {"attn_k": "attn.W_K.weight", "attn_k_norm": "attn.k_norm_w"}
            names |= {} if cfg.k_is_v(layer) else {"attn_v": "attn.W_V.weight"}
        if cfg.layer_scalar:
            names["layer_output_scale"] = "layer_scalar"
        for gguf_name, ours in names.items():
            out[f"stack.blocks.{layer}.{ours}"] = source.get(f"blk.{layer}.{gguf_name}.weight")
        if cfg.experts_beside_mlp:
            out |= gguf_moe_weights(cfg, source, layer)
    source.shapes = outside
    return out | outside_blocks(cfg, source, (ROPE_FREQS,))


# the MoE block's norms, GGUF names -> ours (model/moe.py FfnBesideExperts)
GGUF_MOE_NORMS = {"post_ffw_norm_1": "norm_dense_w", "pre_ffw_norm_2": "norm_experts_in_w",
                  "post_ffw_norm_2": "norm_experts_out_w"}


def gguf_moe_weights(cfg: TransformerConfig, source: ModelTensors, layer: int) -> StateDict:
    """One layer's router (ffn_gate_inp and its scale), per-expert scales, norms and experts (split per expert, gate
    rows first; a stored expert stays stored)."""
    blk, ours = f"blk.{layer}.", f"stack.blocks.{layer}.mlp."
    out = {ours + "W_router.weight": source.get(blk + "ffn_gate_inp.weight"),
           ours + "router_scale": source.get(blk + "ffn_gate_inp.scale"),
           ours + "per_expert_scale": source.get(blk + "ffn_down_exps.scale")}
    out |= {ours + name: source.get(f"{blk}{norm}.weight") for norm, name in GGUF_MOE_NORMS.items()}
    gate_up, down = source.get(blk + "ffn_gate_up_exps.weight"), source.get(blk + "ffn_down_exps.weight")
    return out | split_fused(gate_up, down, cfg, ours, blk)


HF = HfFamily("gemma4_text", HF_FIELDS, convert_hf)
GGUF = GgufFamily("gemma4", GGUF_KEYS | {
    "rope.freq_base_swa", "attention.key_length", "attention.value_length", "attention.key_length_swa",
    "attention.value_length_swa", "rope.dimension_count", "rope.dimension_count_swa", "attention.shared_kv_layers",
    "embedding_length_per_layer_input", "final_logit_softcapping", "expert_count", "expert_used_count",
    "expert_feed_forward_length"}, gguf_config, convert_gguf, gguf_shapes)
