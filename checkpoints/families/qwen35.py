"""Qwen3.5 (dense, text): a hybrid. Most layers are gated DeltaNet (model/deltanet.py: a matrix state written by the
delta rule), one in every few (layer_types; by default every fourth) is full attention whose output is gated:

    DeltaNet layer:   h = x + DeltaNet(norm(x))      (its q, k, v, z, a, b; a causal convolution; S_t; o_t = S_t q_t)
    attention layer:  h = x + W_O · (attn(RoPE(norm_q(q)), RoPE(norm_k(k)), v) ⊙ sigmoid(W_G · norm(x)))
    both:             out = h + W_out · (silu(W_gate · norm(h)) ⊙ W_in · norm(h))

with RMSNorms that multiply by 1 + w (held here as the gain 1 + w, as for Gemma), each attention head's q and k
RMS-normalized, RoPE on the first quarter of each head only (partial_rotary_factor), and q_proj's rows per head
[query | gate]. Text positions are the same on the three multimodal RoPE axes, so mrope_section changes nothing.

Hugging Face `qwen3_5_text` (Qwen3_5ForCausalLM). GGUF `qwen35`, as llama.cpp's converter writes it: the zero-centred
norms stored as 1 + w (not the gated norm, ssm_norm), ssm_a = −exp(A_log), dt_bias as ssm_dt.bias, the convolution
[channels, kernel], and the value heads of a DeltaNet layer reordered from grouped by key head (h = key · r + i) to
tiled (i · key_heads + key), in attn_qkv's v rows, attn_gate, ssm_alpha, ssm_beta, ssm_a, ssm_dt, the convolution's
v channels and ssm_out's columns: undone here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from checkpoints.base import CheckpointError, ConfigFields, StateDict
from checkpoints.experts import gguf_experts, gguf_shared_expert, hf_experts, hf_shared_expert
from checkpoints.families.records import GgufFamily, HfFamily
from checkpoints.gguf_read import GgufRead, shown
from checkpoints.gguf_tensors import ModelTensors, Shapes, outside_blocks
from checkpoints.hf_common import GENERIC_FIELDS, loader_name, strip_prefix, take
from checkpoints.hf_rope import rope_fields
from model.config import TransformerConfig
from model.stored_weights import StoredWeight

HF_FIELDS = GENERIC_FIELDS | ConfigFields(
    read=frozenset({
        "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
        "num_key_value_heads", "head_dim", "max_position_embeddings", "rms_norm_eps", "rope_parameters",
        "attention_bias", "layer_types", "linear_conv_kernel_dim", "linear_key_head_dim", "linear_value_head_dim",
        "linear_num_key_heads", "linear_num_value_heads", "partial_rotary_factor", "full_attention_interval",
    }),
    # mtp_*: the multi-token-prediction head (mtp.* weights) drafts tokens for speculative decoding, it is not part
    # of the next-token logits (transformers does not load it); mamba_ssm_dtype: the state's dtype in fused
    # kernels (ours is float32)
    inert=frozenset({"attention_dropout", "mtp_num_hidden_layers", "mtp_use_dedicated_embeddings",
                     "mamba_ssm_dtype"}),
    # transformers applies hidden_act in the FFN and after the DeltaNet convolution, but silu in the gated norm:
    # only silu is implemented (the DeltaNet layer's own activations are silu); the attention output gate is on in
    # every Qwen3.5 (released configs write attn_output_gate: true); mlp_only_layers is the MoE models'
    defaults={"hidden_act": "silu", "attn_output_gate": True, "mlp_only_layers": []},
)
KINDS = ("linear_attention", "full_attention")
# keys of rope_parameters that only multimodal positions use: text positions are equal on the three axes
MROPE_KEYS = ("mrope_section", "mrope_interleaved")


def layer_kinds(hf_config: dict[str, Any], loader: str, n_layers: int) -> list[str]:
    """layer_types, or transformers' default: linear_attention except every full_attention_interval-th (4)."""
    every = hf_config.get("full_attention_interval", 4)
    if isinstance(every, bool) or not isinstance(every, int) or every < 1:
        raise CheckpointError(f"{loader}: config field full_attention_interval = {every!r} must be a whole number >= 1")
    kinds = hf_config.get("layer_types") or [KINDS[(i + 1) % every == 0] for i in range(n_layers)]
    if not isinstance(kinds, list) or len(kinds) != n_layers or set(kinds) - set(KINDS):
        raise CheckpointError(f"{loader}: config field layer_types = {kinds!r} is not implemented (one of "
                              f"{', '.join(KINDS)} per layer, {n_layers} layers)")
    return kinds


# Qwen3.5-MoE (checkpoints/families/qwen35_moe.py): the config fields of its experts, from config.json or the GGUF
# metadata; with them every layer's FFN is a mixture of experts with a shared expert
HfMoe = Callable[[dict[str, Any], str], dict[str, Any]]
GgufMoe = Callable[[GgufRead], dict[str, Any]]


def convert_hf(hf_config: dict[str, Any], state: StateDict,
               moe: HfMoe | None = None) -> tuple[TransformerConfig, StateDict]:
    """A Qwen3.5 text directory (Qwen3_5ForCausalLM; with `moe`, Qwen3_5MoeForCausalLM): its config and weights."""
    loader = loader_name(str(hf_config.get("model_type")))
    state = strip_prefix(state, ("model.",))
    d_model, n_heads, n_layers = hf_config["hidden_size"], hf_config["num_attention_heads"], \
        hf_config["num_hidden_layers"]
    head_dim = hf_config.get("head_dim") or d_model // n_heads
    rope = dict(hf_config.get("rope_parameters") or {})
    for key in MROPE_KEYS:
        rope.pop(key, None)
    rope.setdefault("partial_rotary_factor", hf_config.get("partial_rotary_factor", 0.25))  # transformers' default
    fields = rope_fields({"rope_parameters": rope}, loader, head_dim, phi=True)
    kinds = layer_kinds(hf_config, loader, n_layers)
    bias = bool(hf_config.get("attention_bias", False))
    cfg = TransformerConfig(
        architecture="decoder", vocab_size=hf_config["vocab_size"], d_model=d_model, n_layers=n_layers,
        n_heads=n_heads, n_kv_heads=hf_config.get("num_key_value_heads") or n_heads,
        head_dim=None if head_dim * n_heads == d_model else head_dim,
        d_mlp=hf_config["intermediate_size"] if moe is None else None, **(moe(hf_config, loader) if moe else {}),
        n_ctx=min(int(hf_config.get("max_position_embeddings", 4096)), 4096), pos_encoding="rope", **fields,
        norm="rmsnorm", norm_placement="pre", norm_eps=hf_config.get("rms_norm_eps", 1e-6), qk_norm=True,
        activation="swiglu", bias=False, qkv_bias=bias,
        attn_out_bias=bias, tied_embeddings=bool(hf_config.get("tie_word_embeddings", False))
        or "lm_head.weight" not in state,
        deltanet_layers=tuple(i for i, kind in enumerate(kinds) if kind == "linear_attention") or None,
        deltanet_key_heads=hf_config.get("linear_num_key_heads", 16),
        deltanet_value_heads=hf_config.get("linear_num_value_heads", 32),
        deltanet_key_dim=hf_config.get("linear_key_head_dim", 128),
        deltanet_value_dim=hf_config.get("linear_value_head_dim", 128),
        deltanet_conv=hf_config.get("linear_conv_kernel_dim", 4), attn_output_gate=True,
    ) if "linear_attention" in kinds else None
    if cfg is None:
        raise CheckpointError(f"{loader}: config field layer_types = {kinds!r} has no linear_attention layer: "
                              "a Qwen3.5 model without gated DeltaNet layers is not implemented")
    out: StateDict = {"stack.embed.W_E.weight": take(state, "embed_tokens.weight")}
    for layer in range(n_layers):
        hf, ours = f"layers.{layer}.", f"stack.blocks.{layer}."
        if cfg.is_deltanet(layer):
            dn = hf + "linear_attn."
            out |= {ours + f"deltanet.{name}.weight": take(state, f"{dn}{hf_name}.weight") for hf_name, name in (
                ("in_proj_qkv", "W_qkv"), ("in_proj_z", "W_z"), ("in_proj_a", "W_a"), ("in_proj_b", "W_b"),
                ("out_proj", "W_O"))}
            out[ours + "deltanet.conv_w"] = take(state, dn + "conv1d.weight")[:, 0, :]  # [channels, 1, kernel]
            out[ours + "deltanet.A_log"] = take(state, dn + "A_log")
            out[ours + "deltanet.dt_bias"] = take(state, dn + "dt_bias")
            out[ours + "deltanet.norm_w"] = take(state, dn + "norm.weight")  # the gated norm: its gain is w
        else:
            at = hf + "self_attn."
            query, gate = split_query_gate(take(state, at + "q_proj.weight"), n_heads)
            out |= {ours + "attn.W_Q.weight": query, ours + "attn.W_G.weight": gate,
                    ours + "attn.W_K.weight": take(state, at + "k_proj.weight"),
                    ours + "attn.W_V.weight": take(state, at + "v_proj.weight"),
                    ours + "attn.W_O.weight": take(state, at + "o_proj.weight"),
                    ours + "attn.q_norm_w": 1.0 + take(state, at + "q_norm.weight").float(),
                    ours + "attn.k_norm_w": 1.0 + take(state, at + "k_norm.weight").float()}
            if bias:
                query_bias, gate_bias = split_query_gate(take(state, at + "q_proj.bias"), n_heads)
                out |= {ours + "attn.W_Q.bias": query_bias, ours + "attn.W_G.bias": gate_bias} | {
                    ours + f"attn.{name}.bias": take(state, f"{at}{hf_name}.bias")
                    for hf_name, name in (("k_proj", "W_K"), ("v_proj", "W_V"), ("o_proj", "W_O"))}
        if cfg.is_moe(layer):  # Qwen3.5-MoE: the router, its experts and the shared expert
            out |= hf_experts(state, hf, ours, cfg) | hf_shared_expert(state, hf, ours)
        else:
            out |= {ours + f"mlp.{name}.weight": take(state, f"{hf}mlp.{hf_name}.weight") for hf_name, name in (
                ("gate_proj", "W_gate"), ("up_proj", "W_in"), ("down_proj", "W_out"))}
        # Qwen3.5's RMSNorm multiplies by 1 + w: we hold the gain itself
        out[ours + "ln1.w"] = 1.0 + take(state, hf + "input_layernorm.weight").float()
        out[ours + "ln2.w"] = 1.0 + take(state, hf + "post_attention_layernorm.weight").float()
    out["stack.ln_final.w"] = 1.0 + take(state, "norm.weight").float()
    if not cfg.tied_embeddings:
        out["W_U.weight"] = take(state, "lm_head.weight")
    return cfg, out


def split_query_gate(rows: torch.Tensor, n_heads: int) -> tuple[torch.Tensor, torch.Tensor]:
    """q_proj's rows (or bias), per head [query | gate] (2 · d_head each), -> (W_Q's rows, W_G's rows)."""
    per_head = torch.arange(rows.shape[0]).reshape(n_heads, 2, -1)
    return rows_of(rows, per_head[:, 0].reshape(-1)), rows_of(rows, per_head[:, 1].reshape(-1))


def rows_of(tensor: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """tensor[index] along its rows; a weight kept in its file's precision stays so (its row order changes)."""
    return tensor.reordered(index) if isinstance(tensor, StoredWeight) else tensor[index]


# ---------------------------------------------------------------- GGUF

GGUF_KEYS = frozenset({
    "vocab_size", "context_length", "embedding_length", "block_count", "feed_forward_length",
    "attention.head_count", "attention.head_count_kv", "attention.layer_norm_rms_epsilon", "rope.freq_base",
    "attention.key_length", "attention.value_length", "rope.dimension_count", "rope.dimension_sections",
    "full_attention_interval", "ssm.conv_kernel", "ssm.state_size", "ssm.group_count", "ssm.time_step_rank",
    "ssm.inner_size",
})


def gguf_config(read: GgufRead, moe: GgufMoe | None = None) -> TransformerConfig:
    """A qwen35 file as llama.cpp runs it: full attention every full_attention_interval-th layer (llama.cpp's
    hparams: layer i is recurrent unless (i + 1) % interval == 0), the others gated DeltaNet, whose sizes are the
    ssm keys (group_count key heads of state_size, time_step_rank value heads, inner_size = their total width)."""
    read = per_layer_kv_heads(read)
    common = read.common()
    n_layers, head_size = common["n_layers"], read.head_size
    every = int(read.number("full_attention_interval", 4.0))
    if every < 1:
        raise CheckpointError(f"{read.prefix}full_attention_interval = {every} must be at least 1")
    key_heads, key_dim = int(read.number("ssm.group_count")), int(read.number("ssm.state_size"))
    heads, inner = int(read.number("ssm.time_step_rank")), int(read.number("ssm.inner_size"))
    if heads < 1 or inner % heads:
        raise CheckpointError(f"{read.prefix}ssm.inner_size = {inner} is not {read.prefix}ssm.time_step_rank = "
                              f"{heads} value heads of one width")
    if int(read.get("attention.value_length", head_size)) != head_size:
        raise CheckpointError(f"{read.prefix}attention.value_length = {read.get('attention.value_length')}, but the "
                              f"head size is {head_size}: a value head size of its own is not implemented")
    sections = read.get("rope.dimension_sections", [0])
    if not isinstance(sections, list) or not all(isinstance(s, int) and s >= 0 for s in sections):
        raise CheckpointError(f"{read.prefix}rope.dimension_sections = {shown(sections)} is not implemented")
    rope_dims = int(read.number("rope.dimension_count", float(head_size)))
    deltanet = tuple(i for i in range(n_layers) if (i + 1) % every)
    if not deltanet:
        raise CheckpointError(f"{read.prefix}full_attention_interval = {every}: every layer is full attention, "
                              "a Qwen3.5 model without gated DeltaNet layers is not implemented")
    common["head_dim"] = head_size if head_size * common["n_heads"] != common["d_model"] else None
    return TransformerConfig(
        **common, d_mlp=int(read.number("feed_forward_length")) if moe is None else None,
        **(moe(read) if moe else {}), pos_encoding="rope",
        rope_base=read.number("rope.freq_base", 10000.0), rope_dims=None if rope_dims == head_size else rope_dims,
        norm="rmsnorm", norm_eps=read.number("attention.layer_norm_rms_epsilon"), qk_norm=True,
        activation="swiglu", bias=False, deltanet_layers=deltanet, deltanet_key_heads=key_heads,
        deltanet_value_heads=heads, deltanet_key_dim=key_dim, deltanet_value_dim=inner // heads,
        deltanet_conv=int(read.number("ssm.conv_kernel")), attn_output_gate=True,
    )


def per_layer_kv_heads(read: GgufRead) -> GgufRead:
    """attention.head_count_kv may list one count per layer (0 for a recurrent layer): every attention layer's
    must then be the same, read as the one count."""
    key = read.prefix + "attention.head_count_kv"
    counts = read.metadata.get(key)
    if not isinstance(counts, list):
        return read
    kept = {c for c in counts if c}
    if len(kept) != 1 or not all(isinstance(c, int) for c in counts):
        raise CheckpointError(f"{key} = {shown(counts)}: attention layers with different K/V head counts are not "
                              "implemented")
    return GgufRead({**read.metadata, key: kept.pop()}, read.arch, read.tied, read.factors, read.context_cap)


def gguf_shapes(cfg: TransformerConfig, shapes: Shapes) -> Shapes:
    """What a qwen35 file stores of its own: the fused q + gate of attention, the DeltaNet tensors."""
    d, q = cfg.d_model, cfg.n_heads * cfg.d_head
    key_width = (cfg.deltanet_key_heads or 0) * (cfg.deltanet_key_dim or 0)
    heads, value_width = cfg.deltanet_value_heads or 0, (cfg.deltanet_value_heads or 0) * (cfg.deltanet_value_dim or 0)
    conv = 2 * key_width + value_width
    ssm = f"ssm.group_count × state_size {key_width}, ssm.inner_size {value_width}"
    return shapes | {
        "attn_q.weight": ((2 * q, d), f"query and gate: 2 × head_count {cfg.n_heads} × key_length {cfg.d_head}"),
        "attn_qkv.weight": ((conv, d), ssm), "attn_gate.weight": ((value_width, d), ssm),
        "ssm_alpha.weight": ((heads, d), f"ssm.time_step_rank {heads}"),
        "ssm_beta.weight": ((heads, d), f"ssm.time_step_rank {heads}"),
        "ssm_a": ((heads,), f"ssm.time_step_rank {heads}"), "ssm_dt.bias": ((heads,), f"ssm.time_step_rank {heads}"),
        "ssm_conv1d.weight": ((conv, cfg.deltanet_conv or 0), f"{ssm}, ssm.conv_kernel {cfg.deltanet_conv}"),
        "ssm_norm.weight": ((cfg.deltanet_value_dim or 0,), ssm), "ssm_out.weight": ((d, value_width), ssm),
    }


def untile(tensor: torch.Tensor, key_heads: int, heads: int, dim: int = 0) -> torch.Tensor:
    """Undo llama.cpp's value-head reorder along `dim` (units of one head each): the file's head i · key_heads + key
    is transformers' key · (heads / key_heads) + i."""
    moved = tensor.movedim(dim, 0)
    per = moved.reshape(heads // key_heads, key_heads, -1, *moved.shape[1:])  # [i, key, unit, ...]
    return per.transpose(0, 1).reshape(moved.shape).movedim(0, dim)


def convert_gguf(cfg: TransformerConfig, source: ModelTensors) -> StateDict:
    """qwen35 tensor names -> ours: the norms read as stored (llama.cpp stores the gain 1 + w), A_log = log(−ssm_a),
    the value heads of the DeltaNet tensors put back in transformers' order (rows reordered, so a weight kept in
    its file's precision stays so; ssm_out's columns are read as float32)."""
    out: StateDict = {"stack.embed.W_E.weight": source.get("token_embd.weight")}
    key_heads, heads = cfg.deltanet_key_heads or 1, cfg.deltanet_value_heads or 1
    key_width = key_heads * (cfg.deltanet_key_dim or 0)
    value_rows = untile(torch.arange(heads * (cfg.deltanet_value_dim or 0)), key_heads, heads)
    head_rows = untile(torch.arange(heads), key_heads, heads)
    fused_rows = torch.cat((torch.arange(2 * key_width), 2 * key_width + value_rows))  # q and k as they are

    def value_heads(name: str, rows: torch.Tensor) -> torch.Tensor:
        return rows_of(source.get(name), rows)

    for layer in range(cfg.n_layers):
        blk, ours = f"blk.{layer}.", f"stack.blocks.{layer}."
        if cfg.is_deltanet(layer):
            out |= {ours + "deltanet.W_qkv.weight": value_heads(blk + "attn_qkv.weight", fused_rows),
                    ours + "deltanet.conv_w": value_heads(blk + "ssm_conv1d.weight", fused_rows),
                    ours + "deltanet.W_z.weight": value_heads(blk + "attn_gate.weight", value_rows),
                    ours + "deltanet.W_a.weight": value_heads(blk + "ssm_alpha.weight", head_rows),
                    ours + "deltanet.W_b.weight": value_heads(blk + "ssm_beta.weight", head_rows),
                    ours + "deltanet.A_log": value_heads(blk + "ssm_a", head_rows).float().neg().log(),
                    ours + "deltanet.dt_bias": value_heads(blk + "ssm_dt.bias", head_rows),
                    ours + "deltanet.norm_w": source.get(blk + "ssm_norm.weight"),
                    ours + "deltanet.W_O.weight": source.get(blk + "ssm_out.weight").float()[:, value_rows]}
        else:
            query, gate = split_query_gate(source.get(blk + "attn_q.weight"), cfg.n_heads)
            out |= {ours + "attn.W_Q.weight": query, ours + "attn.W_G.weight": gate,
                    ours + "attn.W_K.weight": source.get(blk + "attn_k.weight"),
                    ours + "attn.W_V.weight": source.get(blk + "attn_v.weight"),
                    ours + "attn.W_O.weight": source.get(blk + "attn_output.weight"),
                    ours + "attn.q_norm_w": source.get(blk + "attn_q_norm.weight"),
                    ours + "attn.k_norm_w": source.get(blk + "attn_k_norm.weight")}
        if cfg.is_moe(layer):  # qwen35moe: the router, its experts and the shared expert
            out |= gguf_experts(source, blk, ours, cfg) | gguf_shared_expert(source, blk, ours)
        else:
            out |= {ours + "mlp.W_gate.weight": source.get(blk + "ffn_gate.weight"),
                    ours + "mlp.W_in.weight": source.get(blk + "ffn_up.weight"),
                    ours + "mlp.W_out.weight": source.get(blk + "ffn_down.weight")}
        out |= {ours + "ln1.w": source.get(blk + "attn_norm.weight"),
                ours + "ln2.w": source.get(blk + "post_attention_norm.weight")}
    return out | outside_blocks(cfg, source, ())


HF = HfFamily("qwen3_5_text", HF_FIELDS, convert_hf)
# no pre-split of its own: a file naming one this project does not know is refused by name
GGUF = GgufFamily("qwen35", GGUF_KEYS, gguf_config, convert_gguf, gguf_shapes, factor_tensors=())
