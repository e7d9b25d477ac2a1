"""The building blocks, in the order a token meets them: embedding, norm, attention, FFN, block.

Shape comments use the dimension words of the trace and the API:
batch, pos, d_model, head, kv_head, d_head, q_pos, k_pos, d_mlp, d_vocab.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from model.config import TransformerConfig
from model.deltanet import GatedDeltaNet
from model.ffn import MLP  # the FFN, in its own module (imported from here by the lab too)
from model.head_math import blind_rows, grouped_mix, grouped_scores, masked, rms_per_head, soft_cap
from model.hooks import HookPoint
from model.kv_cache import LayerKV
from model.moe import FfnBesideExperts, MoE
from model.per_layer_inputs import PerLayerParts
from model.positional import BiasKind, EmbeddingKind, RotaryKind, rope_waves


class Embed(nn.Module):
    """Token ids -> vectors, plus positions (an embedding kind's table) and BERT's segment embedding."""

    pe_table: torch.Tensor  # [n_ctx, d_model] buffer: the fixed table of an embedding kind that is not learned

    def __init__(self, cfg: TransformerConfig, W_E: nn.Embedding | None = None) -> None:
        super().__init__()
        self.cfg = cfg
        self.W_E = W_E if W_E is not None else nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.hook_tokens = HookPoint(("batch", "pos"))
        self.hook_embed = HookPoint(("batch", "pos", "d_model"))
        kind = cfg.positional
        self.adds_positions = isinstance(kind, EmbeddingKind)
        if isinstance(kind, EmbeddingKind):
            if kind.learned:
                self.W_pos = nn.Embedding(cfg.n_ctx, cfg.d_model)
            else:
                with torch.device("cpu"):  # a fixed table, real even when the modules are built on "meta"
                    self.register_buffer("pe_table", kind.table(cfg.n_ctx, cfg.d_model), persistent=False)
            self.hook_pos_embed = HookPoint(("pos", "d_model"))
        if cfg.n_token_types:
            self.W_token_type = nn.Embedding(cfg.n_token_types, cfg.d_model)
            self.hook_token_type_embed = HookPoint(("batch", "pos", "d_model"))
        if cfg.embed_norm:
            self.ln_embed = Norm(cfg)

    def forward(
        self, tokens: torch.Tensor, token_type_ids: torch.Tensor | None = None, start: int = 0
    ) -> torch.Tensor:
        """tokens: [batch, pos] at positions start, start + 1, ... (start > 0: decoding with a KV cache)."""
        cfg = self.cfg
        tokens = self.hook_tokens(tokens)  # [batch, pos]
        n_pos = tokens.shape[1]
        if start + n_pos > cfg.n_ctx:
            raise ValueError(f"sequence of {start + n_pos} tokens is longer than the model's context of {cfg.n_ctx}")
        embed = self.W_E(tokens)  # [batch, pos, d_model]
        if cfg.scale_embeddings:
            embed = embed * math.sqrt(cfg.d_model)
        x = self.hook_embed(embed)
        if self.adds_positions:
            x = x + self.hook_pos_embed(self.position_table()[start : start + n_pos])  # [pos, d_model]
        if cfg.n_token_types:
            types = token_type_ids if token_type_ids is not None else torch.zeros_like(tokens)
            x = x + self.hook_token_type_embed(self.W_token_type(types))  # [batch, pos, d_model]
        if cfg.embed_norm:
            x = self.ln_embed(x)
        return x  # [batch, pos, d_model]

    def position_table(self) -> torch.Tensor:
        """What is added to the token vectors: a learned kind's W_pos, else its fixed table.  [n_ctx, d_model]"""
        return self.W_pos.weight if hasattr(self, "W_pos") else self.pe_table


class Norm(nn.Module):
    """LayerNorm: (x - mean) / sqrt(var + eps) * w + b.   RMSNorm: x / sqrt(mean(x^2) + eps) * w.

    The statistics are hook points too: `hook_mean` (LayerNorm only) and `hook_scale`,
    the per-position divisor, both [batch, pos].
    """

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.kind = cfg.norm
        self.eps = cfg.norm_eps
        self.w = nn.Parameter(torch.ones(cfg.d_model))
        if self.kind == "layernorm":
            self.b = nn.Parameter(torch.zeros(cfg.d_model))
            self.hook_mean = HookPoint(("batch", "pos"))
        self.hook_scale = HookPoint(("batch", "pos"))
        self.hook_normalized = HookPoint(("batch", "pos", "d_model"))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.kind == "layernorm":
            mean = self.hook_mean(x.mean(-1))  # [batch, pos]
            centered = x - mean[..., None]  # [batch, pos, d_model]
            scale = self.hook_scale((centered.pow(2).mean(-1) + self.eps).sqrt())  # [batch, pos]
            return self.hook_normalized(centered / scale[..., None] * self.w + self.b)
        scale = self.hook_scale((x.pow(2).mean(-1) + self.eps).sqrt())  # [batch, pos]
        return self.hook_normalized(x / scale[..., None] * self.w)


class Attention(nn.Module):
    """softmax(mask(Q·Kᵀ / sqrt(d_head) + bias)) · V, one head per slice, then W_O.

    Self-attention when x_kv is x_q; cross-attention when x_kv is the encoder output.
    With GQA/MQA each K/V head serves n_heads / n_kv_heads query heads. With
    cfg.scale_attn_by_layer (a GPT-2 option) layer L divides its scores by L + 1 too.
    """

    angle_table: torch.Tensor  # [n_ctx, rotary_dims/2] rotation angles, rotary kinds only
    long_angle_table: torch.Tensor  # [n_ctx, rotary_dims/2] longrope's angles past its original context

    def __init__(self, cfg: TransformerConfig, causal: bool, cross: bool = False, layer: int = 0) -> None:
        super().__init__()
        self.cfg = cfg
        self.causal = causal
        self.cross = cross
        self.scale = cfg.score_divisor(layer)
        # the positional kind acts on self-attention only: cross-attention compares two sequences' positions
        kind = cfg.positional
        # rotates q and k; a NoPE layer (SmolLM3) turns neither: its attention sees no positions
        self.rotary = kind if isinstance(kind, RotaryKind) and not cross and cfg.has_positions(layer) else None
        self.score_bias = kind if isinstance(kind, BiasKind) and not cross else None  # adds a bias to the scores
        self.long_from: int | None = None  # longrope: sequences longer than this use long_angle_table
        # Gemma 4: a global layer's own head width and K/V heads; K and V of an earlier layer (kv_source); V = K
        d_head, n_heads, kv_heads = cfg.d_head_of(layer), cfg.n_heads, cfg.kv_heads_of(layer)
        self.d_head, self.kv_heads = d_head, kv_heads
        self.layer, self.kv_source = layer, cfg.kv_source_of(layer) if not cross else layer
        self.k_is_v = cfg.k_is_v(layer) and not cross
        self.W_Q = nn.Linear(cfg.d_model, n_heads * d_head, bias=cfg.use_qkv_bias)
        self.hook_q = HookPoint(("batch", "pos", "head", "d_head"))
        self.qk_norm = cfg.qk_norm
        self.shares_kv = self.kv_source != layer
        if not self.shares_kv:
            self.W_K = nn.Linear(cfg.d_model, kv_heads * d_head, bias=cfg.use_qkv_bias)
            if not self.k_is_v:
                self.W_V = nn.Linear(cfg.d_model, kv_heads * d_head, bias=cfg.use_qkv_bias)
            self.hook_k = HookPoint(("batch", "pos", "kv_head", "d_head"))
            self.hook_v = HookPoint(("batch", "pos", "kv_head", "d_head"))
        else:  # the K and V of layer kv_source, as that layer attends with them (normed, turned)
            self.hook_k_shared = HookPoint(("batch", "pos", "kv_head", "d_head"))
            self.hook_v_shared = HookPoint(("batch", "pos", "kv_head", "d_head"))
        self.W_O = nn.Linear(n_heads * d_head, cfg.d_model, bias=cfg.use_attn_out_bias)
        self.norm_eps = cfg.norm_eps
        if cfg.qk_norm:  # Qwen3: each head's q and k RMS-normalized over d_head, one weight shared by the heads
            self.q_norm_w = nn.Parameter(torch.ones(d_head))
            self.hook_norm_q = HookPoint(("batch", "pos", "head", "d_head"))
            if not self.shares_kv:
                self.k_norm_w = nn.Parameter(torch.ones(d_head))
                self.hook_norm_k = HookPoint(("batch", "pos", "kv_head", "d_head"))
        self.v_norm = cfg.v_norm and not self.shares_kv
        if self.v_norm:  # Gemma 4: each head's v RMS-normalized, without a gain
            self.hook_norm_v = HookPoint(("batch", "pos", "kv_head", "d_head"))
        if self.rotary is not None:
            self.hook_rot_q = HookPoint(("batch", "pos", "head", "d_head"))
            if not self.shares_kv:
                self.hook_rot_k = HookPoint(("batch", "pos", "kv_head", "d_head"))
            with torch.device("cpu"):  # a fixed table, real even when the modules are built on "meta"
                base, factors = cfg.rope_of(layer) if not cross else (cfg.rope_base, cfg.rope_freq_factors)
                angles = self.rotary.scaled_angles(cfg.n_ctx, cfg.rotary_dims_of(layer), base, factors)
                self.register_buffer("angle_table", angles, persistent=False)
                # longrope: the table of the long factor set, for sequences longer than the original context
                original = cfg.rope_original_context
                if cfg.rope_long_freq_factors is not None and original is not None and original < cfg.n_ctx:
                    self.long_from = original
                    long = self.rotary.scaled_angles(cfg.n_ctx, cfg.rotary_dims, base, cfg.rope_long_freq_factors)
                    self.register_buffer("long_angle_table", long, persistent=False)
        scores_dims = ("batch", "head", "q_pos", "k_pos")
        self.hook_scores_raw = HookPoint(scores_dims)
        self.hook_scores_scaled = HookPoint(scores_dims)
        self.softcap = cfg.attn_softcap
        if self.softcap is not None:  # Gemma 2: cap·tanh(S′ / cap), so no score leaves (-cap, cap)
            self.hook_scores_capped = HookPoint(scores_dims)
        self.hook_attn_scores = HookPoint(scores_dims)
        self.hook_pattern = HookPoint(scores_dims)
        self.hook_z = HookPoint(("batch", "pos", "head", "d_head"))
        self.output_gate = cfg.attn_output_gate
        if cfg.attn_output_gate:  # Qwen3.5: z ⊙ sigmoid(W_G · x), each head's output scaled per dimension
            self.W_G = nn.Linear(cfg.d_model, n_heads * d_head, bias=cfg.use_qkv_bias)
            self.hook_out_gate = HookPoint(("batch", "pos", "head", "d_head"))
            self.hook_z_gated = HookPoint(("batch", "pos", "head", "d_head"))
        # Training steps only (Transformer.fused_attention): steps 3-5 in one fused kernel,
        # the same math without the intermediate stages. Never on while a trace records.
        self.fused = False

    def forward(
        self,
        x_q: torch.Tensor,
        x_kv: torch.Tensor,
        allowed: torch.Tensor | None,
        cache: LayerKV | None = None,
        start: int = 0,
        shared: dict[int, tuple[torch.Tensor, torch.Tensor]] | None = None,
    ) -> torch.Tensor:
        """x_q: [batch, q_pos, d_model]; x_kv: [batch, k_pos, d_model]; allowed: bool [batch|1, 1, q_pos, k_pos].
        shared (Gemma 4): layer -> the K and V it attends with (every position so far), for the later layers that
        share them (cfg.kv_source); this layer adds its own or reads its source's.

        With a KV cache, x_q and x_kv hold only the new positions (from `start` on) and the keys
        and values of the earlier ones come from `cache`, which grows by the new ones; `allowed`
        then covers every key. Cross-attention stores the source's K and V on its first step.
        """
        cfg = self.cfg
        batch, q_len, _ = x_q.shape
        # 1) project into heads
        d_head, kv_heads = self.d_head, self.kv_heads
        q = self.hook_q(self.W_Q(x_q).view(batch, q_len, cfg.n_heads, d_head))  # [batch, pos, head, d_head]
        if self.qk_norm:
            q = self.hook_norm_q(rms_per_head(q, self.q_norm_w, self.norm_eps))
        if self.shares_kv:  # Gemma 4: the K and V of layer kv_source (already normed, turned and cached)
            k, v = ((shared or {})[self.kv_source])  # [batch, k_pos, kv_head, d_head] each
            k, v = self.hook_k_shared(k), self.hook_v_shared(v)
            if self.rotary is not None:
                table = self.angles_for(start + q_len)
                q = self.hook_rot_q(self.rotary.rotate(q, table[start : start + q_len], cfg.rope_attention_factor))
        elif cache is not None and self.cross and cache.k is not None and cache.v is not None:
            k, v = cache.k, cache.v  # cross-attention: the source's K and V, stored on the first step
        else:
            new = x_kv.shape[1]
            k = self.hook_k(self.W_K(x_kv).view(batch, new, kv_heads, d_head))  # [batch, pos, kv_head, d_head]
            # Gemma 4's K = V layers: V is the key projection itself, before the k norm and RoPE
            v = self.hook_v(k if self.k_is_v else self.W_V(x_kv).view(batch, new, kv_heads, d_head))
            if self.qk_norm:
                k = self.hook_norm_k(rms_per_head(k, self.k_norm_w, self.norm_eps))
            if self.v_norm:
                v = self.hook_norm_v(rms_per_head(v, None, self.norm_eps))
            if self.rotary is not None:  # positions start, start + 1, ...: the angles a full pass gives them
                table = self.angles_for(start + new)
                if cache is not None and cache.k is not None and table is not self.angles_for(start):
                    # longrope switches factor sets for the whole sequence: every cached key and value (of every
                    # layer) would change, so the caller starts again without the cache (model/generate.py does)
                    raise ValueError(f"longrope turns a sequence longer than {self.long_from} tokens by its long "
                                     "factors at every position: decode it again from the start, not from a cache")
                factor, q_angles = cfg.rope_attention_factor, table[start : start + q_len]
                waves = rope_waves(q_angles) if new == q_len else None  # self-attention: q and k share positions
                q = self.hook_rot_q(self.rotary.rotate(q, q_angles, factor, waves))
                k = self.hook_rot_k(self.rotary.rotate(k, table[start : start + new], factor, waves))
            if cache is not None:
                k, v = cache.extend(k, v)  # every position so far: [batch, k_pos, kv_head, d_head]
            if shared is not None:
                shared[self.layer] = (k, v)
        k_len = k.shape[1]
        # 2) each query head reads its group's key/value head (GQA; group 1 for MHA): the group's query heads
        # are stacked as one taller matrix, so K and V are read in place rather than copied once per head
        group = cfg.n_heads // kv_heads
        if self.fused and self.score_bias is None and self.softcap is None:
            k_, v_ = k.repeat_interleave(group, dim=2), v.repeat_interleave(group, dim=2)  # [batch, pos, head, d_head]
            q_, k_, v_ = q.transpose(1, 2), k_.transpose(1, 2), v_.transpose(1, 2)  # [batch, head, pos, d_head]
            z = F.scaled_dot_product_attention(q_, k_, v_, attn_mask=allowed, scale=1 / self.scale).transpose(1, 2)
            z = self.gate_output(x_q, z) if self.output_gate else z
            return self.W_O(z.reshape(batch, q_len, cfg.n_heads * d_head))
        # 3) score every query against every key
        scores_raw = self.hook_scores_raw(grouped_scores(q, k))  # [batch, head, q_pos, k_pos]
        scores_scaled = scores_raw / self.scale
        if self.score_bias is not None:
            # the rows of queries start .. start + q_len - 1 (all of them without a cache)
            bias = self.score_bias.bias(cfg.n_heads, start + q_len, k_len, self.causal)  # [head, q_pos, k_pos]
            bias = bias[:, start:]
            scores_scaled = scores_scaled + bias.to(scores_raw)
        scores_scaled = self.hook_scores_scaled(scores_scaled)
        if self.softcap is not None:
            scores_scaled = self.hook_scores_capped(soft_cap(scores_scaled, self.softcap))
        # 4) hide what this query may not see, then normalise each row
        attn_scores = self.hook_attn_scores(scores_scaled if allowed is None else masked(scores_scaled, allowed))
        pattern = torch.softmax(attn_scores, dim=-1)  # [batch, head, q_pos, k_pos]
        blind = None if allowed is None else blind_rows(allowed)
        if blind is not None:
            # a row with no visible key (a padded query in a batch) attends nowhere: its softmax is 0/0, set to 0
            # here and only here; a NaN from anywhere else (an overflow) stays NaN, for the answer to report it
            pattern = pattern.masked_fill(blind, 0.0)
        pattern = self.hook_pattern(pattern)
        # 5) weighted sum of values, then mix the heads
        z = self.hook_z(grouped_mix(pattern, v))  # [batch, pos, head, d_head]
        if self.output_gate:
            z = self.gate_output(x_q, z)
        return self.W_O(z.reshape(batch, q_len, cfg.n_heads * d_head))  # [batch, pos, d_model]

    def gate_output(self, x_q: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """z [batch, pos, head, d_head] times its gate sigmoid(W_G · x_q), a number in (0, 1) per dimension."""
        gate = self.hook_out_gate(torch.sigmoid(self.W_G(x_q)).view(z.shape))
        return self.hook_z_gated(z * gate)

    def angles_for(self, length: int) -> torch.Tensor:
        """The angle table of a sequence `length` tokens long: longrope's long one past its original context."""
        if self.long_from is not None and length > self.long_from:
            return self.long_angle_table
        return self.angle_table


class Block(PerLayerParts):
    """One layer: self-attention, (cross-attention), FFN, each added back to the residual stream.

    Pre-LN:  x = x + attn(ln1(x));  x = x + mlp(ln2(x))
    Post-LN: x = ln1(x + attn(x));  x = ln2(x + mlp(x))   (the original paper, BERT)
    With post_norms (Gemma):  x = x + ln1_post(attn(ln1(x)));  x = x + ln2_post(mlp(ln2(x)))
    """

    def __init__(self, cfg: TransformerConfig, causal: bool, cross: bool = False, layer: int = 0) -> None:
        super().__init__()
        self.pre_norm = cfg.norm_placement == "pre"
        dims = ("batch", "pos", "d_model")
        self.hook_resid_pre = HookPoint(dims)
        self.ln1 = Norm(cfg)
        self.is_deltanet = cfg.is_deltanet(layer)
        if self.is_deltanet:  # Qwen3.5: a gated DeltaNet layer mixes the tokens instead of attention
            self.deltanet = GatedDeltaNet(cfg, layer)
        else:
            self.attn = Attention(cfg, causal=causal, layer=layer)
        self.post_norms = cfg.post_norms
        if cfg.post_norms:  # Gemma: each sub-layer's output is normalized again before it joins the stream
            self.ln1_post = Norm(cfg)
            self.ln2_post = Norm(cfg)
        self.hook_attn_out = HookPoint(dims)
        if not self.pre_norm:
            self.hook_resid_mid_unnormed = HookPoint(dims)
        self.hook_resid_mid = HookPoint(dims)
        self.has_cross = cross
        if cross:
            self.ln_cross = Norm(cfg)
            self.cross_attn = Attention(cfg, causal=False, cross=True, layer=layer)
            self.hook_cross_attn_out = HookPoint(dims)
            if not self.pre_norm:
                self.hook_resid_cross_unnormed = HookPoint(dims)
            self.hook_resid_cross = HookPoint(dims)
        self.ln2 = Norm(cfg)
        # a mixture of experts (model/moe.py) in the layers the config names, else one FFN
        # (Gemma 4: the FFN and a mixture of experts side by side, FfnBesideExperts, reading the stream too)
        self.experts_beside = cfg.experts_beside_mlp and cfg.is_moe(layer)
        self.mlp: MLP | MoE = FfnBesideExperts(cfg, layer) if self.experts_beside else MoE(cfg) if cfg.is_moe(
            layer) else MLP(cfg, layer)
        self.hook_mlp_out = HookPoint(dims)
        self.per_layer = self.add_per_layer(cfg, Norm)  # Gemma 4: per-layer input and layer scalar (or nothing)
        if not self.pre_norm:
            self.hook_resid_post_unnormed = HookPoint(dims)
        self.hook_resid_post = HookPoint(dims)

    @property
    def stage_prefix(self) -> str:
        """What this block's stage names start with: `blocks.3.`, `decoder.blocks.0.`."""
        return self.hook_resid_pre.name.removesuffix("hook_resid_pre")

    def forward(
        self,
        x: torch.Tensor,
        allowed: torch.Tensor | None,
        memory: torch.Tensor | None = None,
        memory_allowed: torch.Tensor | None = None,
        cache: tuple[LayerKV, LayerKV] | None = None,
        start: int = 0,
        shared: dict[int, tuple[torch.Tensor, torch.Tensor]] | None = None,
        per_layer_input: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """x: [batch, pos, d_model]; cache: (self-attention, cross-attention) K/V of this layer, or None; shared,
        per_layer_input: Gemma 4's K/V of earlier layers and this layer's per-layer input [batch, pos, P]."""
        self_kv, cross_kv = cache if cache is not None else (None, None)
        resid_pre = self.hook_resid_pre(x)  # [batch, pos, d_model]
        if self.is_deltanet:
            real = None if allowed is None else allowed[:, 0].diagonal(start, -2, -1)  # [batch|1, pos]: not padding
            mixed = self.deltanet(self.ln1(resid_pre), None if real is None or bool(real.all()) else real, self_kv)
            x = self.hook_resid_mid(resid_pre + self.hook_attn_out(mixed))
        elif self.pre_norm:
            normed = self.ln1(resid_pre)
            attn_out = self.attn(normed, normed, allowed, self_kv, start, shared)
            attn_out = self.hook_attn_out(self.ln1_post(attn_out) if self.post_norms else attn_out)
            x = self.hook_resid_mid(resid_pre + attn_out)
        else:
            attn_out = self.hook_attn_out(self.attn(resid_pre, resid_pre, allowed, self_kv, start))
            x = self.hook_resid_mid(self.ln1(self.hook_resid_mid_unnormed(resid_pre + attn_out)))
        if self.has_cross:
            if memory is None:
                raise ValueError("a decoder block with cross-attention needs the encoder output")
            if self.pre_norm:
                cross_in = self.ln_cross(x)
                cross_out = self.hook_cross_attn_out(self.cross_attn(cross_in, memory, memory_allowed, cross_kv))
                x = self.hook_resid_cross(x + cross_out)
            else:
                cross_out = self.hook_cross_attn_out(self.cross_attn(x, memory, memory_allowed, cross_kv))
                x = self.hook_resid_cross(self.ln_cross(self.hook_resid_cross_unnormed(x + cross_out)))
        if self.pre_norm:
            mlp_out = self.mlp(self.ln2(x), x) if self.experts_beside else self.mlp(self.ln2(x))
            mlp_out = self.hook_mlp_out(self.ln2_post(mlp_out) if self.post_norms else mlp_out)
            x = x + mlp_out
            return self.hook_resid_post(self.finish_block(x, per_layer_input) if self.per_layer else x)
        mlp_out = self.hook_mlp_out(self.mlp(x))
        return self.hook_resid_post(self.ln2(self.hook_resid_post_unnormed(x + mlp_out)))
