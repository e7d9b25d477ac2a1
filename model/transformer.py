"""Stacks of blocks and the full model: decoder-only, encoder-only or encoder-decoder.

Trace names follow TransformerLens (`blocks.0.attn.hook_pattern`); an encoder-decoder
model prefixes its two stacks (`encoder.blocks.0...`, `decoder.blocks.0.cross_attn...`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from typing import cast

import torch
from torch import nn

from model.compact_trace import CompactTrace
from model.config import TransformerConfig
from model.edits import Interventions
from model.hooks import AttentionLayer, HookPoint, NamesFilter, Trace, active_trace, select_names
from model.kv_cache import KVCache
from model.layers import Attention, Block, Embed, Norm, soft_cap
from model.moe import FfnBesideExperts, MoE
from model.per_layer_inputs import PerLayerInputs, refuse_resume
from model.stored_weights import shapes_only


def attention_allowed(
    q_len: int,
    k_len: int,
    *,
    causal: bool,
    window: int | None,
    key_padding: torch.Tensor | None,
    device: torch.device,
    q_start: int = 0,
) -> torch.Tensor | None:
    """Which keys each query may see: bool [batch|1, 1, q_pos, k_pos], or None when it sees all.

    The queries sit at positions q_start, q_start + 1, ... (q_start > 0: decoding with a KV cache).
    """
    q = torch.arange(q_start, q_start + q_len, device=device)[:, None]
    k = torch.arange(k_len, device=device)[None, :]
    allowed: torch.Tensor | None = None
    if causal:
        allowed = k <= q  # no peeking at later tokens
    if window is not None:
        near = (q - k).abs() < window  # only the last `window` tokens (itself included)
        allowed = near if allowed is None else allowed & near
    if allowed is not None:
        allowed = allowed[None, None]  # [1, 1, q_pos, k_pos]
    if key_padding is not None:
        real_keys = key_padding.bool()[:, None, None, :]  # [batch, 1, 1, k_pos]
        allowed = real_keys if allowed is None else allowed & real_keys
    return allowed


def trace_name(module_name: str) -> str:
    """Module path -> stable trace name: `stack.` and `embed.` are implementation, not stages."""
    parts = [p for p in module_name.split(".") if p not in ("stack", "embed")]
    return ".".join(parts)


class Stack(nn.Module):
    """Embedding, a pile of blocks, and (optionally) a final norm."""

    def __init__(self, cfg: TransformerConfig, n_layers: int, causal: bool, cross: bool, W_E: nn.Embedding | None):
        super().__init__()
        self.cfg = cfg
        self.causal = causal
        self.embed = Embed(cfg, W_E)
        if cfg.per_layer_input is not None:  # Gemma 4: every layer's own input, from the tokens and embeddings
            self.per_layer_inputs = PerLayerInputs(cfg)
            self.hook_pli_token = HookPoint(("batch", "pos", "layer", "d_pli"))  # E_l[token] · √P
            self.hook_pli_context = HookPoint(("batch", "pos", "layer", "d_pli"))  # RMSNorm of the projection
            self.hook_pli = HookPoint(("batch", "pos", "layer", "d_pli"))  # their sum ÷ √2: each layer's input
        self.blocks = nn.ModuleList(Block(cfg, causal=causal, cross=cross, layer=i) for i in range(n_layers))
        if cfg.final_norm:
            self.ln_final = Norm(cfg)

    def forward(
        self,
        tokens: torch.Tensor,
        padding_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        memory: torch.Tensor | None = None,
        memory_padding_mask: torch.Tensor | None = None,
        cache: KVCache | None = None,
    ) -> torch.Tensor:
        """With a KV cache, `tokens` are the new positions only; the earlier ones' K and V come from it."""
        start = 0
        if cache is not None:
            if not self.causal or padding_mask is not None:
                raise ValueError("a KV cache needs causal self-attention without padding")
            start = cache.length
        x = self.embed(tokens, token_type_ids, start)  # [batch, pos, d_model]
        per_layer = None  # Gemma 4: [batch, pos, layer, d_pli]
        if self.cfg.per_layer_input is not None:
            per_layer = self.per_layer_inputs(tokens, x, (self.hook_pli_token, self.hook_pli_context, self.hook_pli))
        shared: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}  # Gemma 4: layer -> the K, V it attends with
        n_pos = tokens.shape[1]
        allowed_by_window = {  # one mask per distinct window (per-layer windows: Qwen2's max_window_layers)
            window: attention_allowed(
                n_pos,
                start + n_pos,
                causal=self.causal,
                window=window,
                key_padding=padding_mask,
                device=tokens.device,
                q_start=start,
            )
            for window in {self.cfg.window_of(index) for index in range(len(self.blocks))}
        }
        memory_allowed = None
        if memory is not None and memory_padding_mask is not None:
            memory_allowed = attention_allowed(
                n_pos,
                memory.shape[1],
                causal=False,
                window=None,
                key_padding=memory_padding_mask,
                device=tokens.device,
            )
        trace = active_trace()
        for index, block in enumerate(self.blocks):
            layer_cache = cache.layer(index) if cache is not None else None
            allowed = allowed_by_window[self.cfg.window_of(index)]
            args = (allowed, memory, memory_allowed, layer_cache, start, shared,
                    None if per_layer is None else per_layer[:, :, index])
            if isinstance(trace, CompactTrace):  # the K/V of earlier layers, as this block finds them (Gemma 4)
                kept = (*args[:5], dict(shared) if self.cfg.kv_source is not None else None, args[6])
                x = trace.run_block(block, cast(Block, block).stage_prefix, x, args, kept)
            else:
                x = block(x, *args)
        if cache is not None:  # the scores this call computed: new queries × every key, per head and layer
            cache.score_cells += tokens.shape[0] * n_pos * (start + n_pos) * self.cfg.n_heads * len(self.blocks)
        if self.cfg.final_norm:
            x = self.ln_final(x)
        return x  # [batch, pos, d_model]

    def resume(self, x: torch.Tensor, first: int, memory: torch.Tensor | None = None) -> torch.Tensor:
        """The rest of forward() from the residual stream x [batch, pos, d_model] entering block `first`
        (no padding, no cache): the same numbers as a full pass whose earlier blocks gave x."""
        refuse_resume(self.cfg, first)
        n_pos = x.shape[1]
        shared: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}  # Gemma 4: K/V of the layers run here
        for index in range(first, len(self.blocks)):
            allowed = attention_allowed(n_pos, n_pos, causal=self.causal, window=self.cfg.window_of(index),
                                        key_padding=None, device=x.device)
            x = self.blocks[index](x, allowed, memory, None, None, 0, shared)
        if self.cfg.final_norm:
            x = self.ln_final(x)
        return x  # [batch, pos, d_model]


class Transformer(nn.Module):
    """The whole model, configured by one `TransformerConfig`.

    forward(tokens) -> logits [batch, pos, d_vocab] (or the final hidden state
    [batch, pos, d_model] when cfg.lm_head is False). Encoder-decoder models take the
    source as `tokens` and the decoder input so far as `target_tokens`.
    """

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        W_E = nn.Embedding(cfg.vocab_size, cfg.d_model)
        if cfg.architecture == "encoder-decoder":
            self.encoder = Stack(cfg, cfg.n_layers, causal=False, cross=False, W_E=W_E)
            self.decoder = Stack(cfg, cfg.decoder_layers, causal=True, cross=True, W_E=W_E)
        else:
            self.stack = Stack(cfg, cfg.n_layers, causal=cfg.causal, cross=False, W_E=W_E)
        if cfg.lm_head:
            self.W_U = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
            if cfg.tied_embeddings:
                self.W_U.weight = W_E.weight
            if cfg.logit_softcap is not None:  # Gemma 2: the logits before cap·tanh(logits / cap)
                self.hook_logits_raw = HookPoint(("batch", "pos", "d_vocab"))
            self.hook_logits = HookPoint(("batch", "pos", "d_vocab"))
        self.hook_points: dict[str, HookPoint] = {}
        for module_name, module in self.named_modules():
            if isinstance(module, HookPoint):
                module.name = trace_name(module_name)
                self.hook_points[module.name] = module
        self._init_weights()

    def _init_weights(self) -> None:
        generator = torch.Generator().manual_seed(self.cfg.seed)
        for name, param in self.named_parameters():
            if name.endswith(".w"):  # norm gains
                nn.init.ones_(param)
            elif name.endswith(".b") or name.endswith(".bias"):
                nn.init.zeros_(param)
            else:
                with torch.no_grad():
                    param.copy_(torch.randn(param.shape, generator=generator) * self.cfg.init_std)

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def forward(
        self,
        tokens: torch.Tensor,
        *,
        target_tokens: torch.Tensor | None = None,
        padding_mask: torch.Tensor | None = None,
        target_padding_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        cache: KVCache | None = None,
    ) -> torch.Tensor:
        """cache (incremental decoding): pass only the new tokens (decoder) or new target tokens
        (encoder-decoder: the source is encoded on the first call and kept); the logits are those
        of the new positions, equal to a full pass's at those positions."""
        if self.cfg.architecture == "encoder-decoder":
            if target_tokens is None:
                raise ValueError("an encoder-decoder model needs target_tokens (the decoder input so far)")
            if cache is not None and cache.memory is not None:
                memory, padding_mask = cache.memory, cache.memory_padding_mask
            else:
                memory = self.encoder(tokens, padding_mask, token_type_ids)  # [batch, pos, d_model]
                if cache is not None:
                    cache.memory, cache.memory_padding_mask = memory, padding_mask
            x = self.decoder(target_tokens, target_padding_mask, None, memory, padding_mask, cache)
        else:
            x = self.stack(tokens, padding_mask, token_type_ids, cache=cache)
        if not self.cfg.lm_head:
            return x  # [batch, pos, d_model]
        return self.unembed(x)  # [batch, pos, d_vocab]

    def unembed(self, x: torch.Tensor) -> torch.Tensor:
        """Logits [batch, pos, d_vocab] from the final (normed) residual stream x: W_U, then a soft cap if the
        model has one (Gemma 2)."""
        logits = self.W_U(x)
        if self.cfg.logit_softcap is not None:
            logits = soft_cap(self.hook_logits_raw(logits), self.cfg.logit_softcap)
        return self.hook_logits(logits)

    @contextmanager
    def fused_attention(self) -> Iterator[None]:
        """For training steps: attention through PyTorch's fused kernel (same math, ~1e-7 apart).

        Training needs no intermediate stages, and on a CPU the fused kernel is several times
        faster. ALiBi layers keep the explicit path; nothing can be traced meanwhile.
        """
        for layer in self.attention_layers:
            layer.fused = True
        try:
            yield
        finally:
            for layer in self.attention_layers:
                layer.fused = False

    def run_with_trace(
        self, tokens: torch.Tensor, names: NamesFilter = None, edits: Interventions | None = None,
        compact: bool = True, **kwargs: torch.Tensor | None,
    ) -> tuple[torch.Tensor, Trace]:
        """Forward pass under inference mode, recording the stages `names` selects (default: all).

        A full trace without edits or a KV cache keeps only what flows between the blocks and runs a block again
        when one of its stages is read (model/compact_trace.py), unless `compact` is False (the tests compare).

        `edits` (model.edits) change this one call: the recorded stages and the output
        are those of the changed model.
        """
        if any(layer.fused for layer in self.attention_layers):
            raise RuntimeError("cannot trace inside fused_attention(): the fused kernel records no stages")
        wanted, hooks = select_names(self.trace_names, names), None
        if edits is not None:
            score_dim = self.cfg.d_head if self.cfg.score_scale_dim is None else self.cfg.score_scale_dim
            hooks, needed = edits.hooks(self.trace_names, score_dim, self.cfg.scale_attn_by_layer)
            wanted = [n for n in self.trace_names if n in set(wanted) | needed]
        if compact and names is None and not hooks and kwargs.get("cache") is None:
            trace: Trace = CompactTrace(wanted)
        else:
            trace = Trace(wanted, hooks)
        with torch.inference_mode(), trace:
            output = self(tokens, **kwargs)
        return output, trace

    def logits_from(self, x: torch.Tensor, first: int, stack: str | None = None,
                    memory: torch.Tensor | None = None) -> torch.Tensor:
        """Logits [batch, pos, d_vocab] from the residual stream x [batch, pos, d_model] entering block `first`
        of `stack` (an encoder-decoder's decoder also takes the encoder output `memory`): a forward pass
        that skips the blocks before `first`, whose output x already is."""
        return self.unembed(self.stack_named(stack).resume(x, first, memory))

    def stack_named(self, stack: str | None) -> Stack:
        """The stack that stage names call `stack` (model.hooks): None, "encoder" or "decoder"."""
        found = {None: getattr(self, "stack", None), "encoder": getattr(self, "encoder", None),
                 "decoder": getattr(self, "decoder", None)}.get(stack)
        if not isinstance(found, Stack):
            raise ValueError(f"this model has no stack {stack!r}")
        return found

    def attention(self, where: AttentionLayer) -> Attention:
        """The module of one attention layer (model.hooks.attention_layer checks that the model has it)."""
        block = self.stack_named(where.stack).blocks[where.layer]
        found = getattr(block, "cross_attn" if where.cross else "attn", None)
        if not isinstance(found, Attention):
            raise ValueError(f"this model has no {'cross-' if where.cross else ''}attention there")
        return found

    @cached_property
    def attention_layers(self) -> list[Attention]:
        """Every attention module (self and cross), found once: a trace checks them on every call."""
        return [m for m in self.modules() if isinstance(m, Attention)]

    @cached_property
    def trace_names(self) -> list[str]:
        """Every stage name in the order the forward pass reaches it."""
        probe = torch.zeros(1, 2, dtype=torch.long, device=self.device)
        target = probe if self.cfg.architecture == "encoder-decoder" else None
        # names and shapes only: weights kept in file precision are not dequantized for it (model.stored_weights)
        with torch.inference_mode(), Trace(self.hook_points) as trace, shapes_only():
            self(probe, target_tokens=target)
        return list(trace)

    def trace_dims(self, name: str) -> tuple[str, ...]:
        return self.hook_points[name].dims

    def parameter_counts(self) -> dict[str, int]:
        """Parameters per component (shared tensors counted once, where they first appear); with a mixture of
        experts also `active`, the parameters one token's pass uses (the chosen experts, n_experts_used per layer)."""
        groups = {"embedding": 0, "positional": 0, "attention": 0, "mlp": 0, "norms": 0, "unembedding": 0}
        if self.cfg.per_layer_input is not None:  # Gemma 4: the per-layer input tables, gates and their norms
            groups["per_layer_inputs"] = 0
        for name, param in distinct_parameters(self):
            leaf = name.split(".")
            if {"per_layer_inputs", "pli", "ln_pli"} & set(leaf):
                groups["per_layer_inputs"] += param.numel()
            elif "W_pos" in leaf:
                groups["positional"] += param.numel()
            elif "W_E" in leaf or "W_token_type" in leaf:
                groups["embedding"] += param.numel()
            elif "attn" in leaf or "cross_attn" in leaf or "deltanet" in leaf:  # the token mixers (Qwen3.5's too)
                groups["attention"] += param.numel()
            elif "mlp" in leaf:
                groups["mlp"] += param.numel()
            elif "W_U" in leaf:
                groups["unembedding"] += param.numel()
            else:
                groups["norms"] += param.numel()  # norm gains (and Gemma 4's one scalar per layer)
        groups["total"] = sum(groups.values())
        if self.cfg.n_experts:  # a mixture of experts: what one token's pass uses, its chosen experts only
            groups["active"] = groups["total"] - sum(
                (len(moe.experts) - moe.top_k) * sum(p.numel() for p in moe.experts[0].parameters())
                for moe in self.modules() if isinstance(moe, (MoE, FfnBesideExperts)))
        return groups


# ---------------------------------------------------------------- shared weights


def shared_weight_aliases(model: nn.Module) -> dict[str, str]:
    """Parameter names that reuse an earlier name's tensor -> that earlier name.

    The tied unembedding (`W_U.weight` -> `stack.embed.W_E.weight`) and, in encoder-decoder
    models, the decoder's token embedding (-> `encoder.embed.W_E.weight`). Counting, saving
    and optimizing skip these aliases so a shared tensor is handled once.
    """
    owner_of: dict[int, str] = {}
    aliases: dict[str, str] = {}
    for name, param in model.named_parameters(remove_duplicate=False):
        if id(param) in owner_of:
            aliases[name] = owner_of[id(param)]
        else:
            owner_of[id(param)] = name
    return aliases


def distinct_parameters(model: nn.Module) -> list[tuple[str, nn.Parameter]]:
    """(name, parameter) for every parameter once, under the first name it has (no tied aliases)."""
    aliases = shared_weight_aliases(model)
    return [(name, p) for name, p in model.named_parameters(remove_duplicate=False) if name not in aliases]


def distinct_state_dict(model: nn.Module) -> dict[str, torch.Tensor]:
    """The state dict with each shared tensor once (what a checkpoint or snapshot stores)."""
    aliases = shared_weight_aliases(model)
    return {name: tensor for name, tensor in model.state_dict().items() if name not in aliases}
