"""LayerNorm against BatchNorm (and RMSNorm) on a real batch of two sentences, at one layer's norm input.

The same numbers x [batch, pos, d_model], three ways to normalise them:

    LayerNorm  (x − μ) / σ   μ, σ over d_model, one pair per token       [batch, pos]
    RMSNorm    x / rms       rms over d_model, one per token              [batch, pos]
    BatchNorm  (x − μ) / σ   μ, σ over batch × pos, one pair per feature  [d_model]

A token's LayerNorm or RMSNorm output reads only that token's own vector. BatchNorm's reads every
real token of the batch, so sentence 1's output changes when sentence 2 is replaced: `swap_change`
measures both. The two sentences are padded on the right to one length; pad positions are masked out
of attention (an encoder) or come after every real token (a causal decoder), and they are left out of
BatchNorm's statistics. Without γ and β: the statistics are the point, not the model's learned scale.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from model.hooks import stage_name
from model.transformer import Transformer

PAD_ID = 0  # what fills the pad positions: never read by a real token, never counted


@dataclass(frozen=True)
class PaddedBatch:
    tokens: torch.Tensor  # [batch, pos] ids, right-padded with PAD_ID
    real: torch.Tensor  # [batch, pos] bool: True for a sentence's own tokens, False for padding


def padded_batch(sentences: list[list[int]], device: torch.device | str = "cpu") -> PaddedBatch:
    """Token ids of several sentences as one right-padded batch."""
    width = max(len(s) for s in sentences)
    tokens = torch.full((len(sentences), width), PAD_ID, dtype=torch.long, device=device)
    real = torch.zeros(len(sentences), width, dtype=torch.bool, device=device)
    for row, ids in enumerate(sentences):
        tokens[row, : len(ids)] = torch.tensor(ids, dtype=torch.long, device=device)
        real[row, : len(ids)] = True
    return PaddedBatch(tokens, real)


def norm_input_stage(model: Transformer, layer: int) -> str:
    """The stage block `layer`'s first norm reads: resid_pre (Pre-Norm) or resid_pre + attention (Post-Norm)."""
    stage = "resid_pre" if model.cfg.norm_placement == "pre" else "resid_mid_unnormed"
    return stage_name(stage, layer)


@dataclass(frozen=True)
class NormInput:
    x: torch.Tensor  # [batch, pos, d_model] float64: what block `layer`'s first norm reads (pad rows unused)
    model_scale: torch.Tensor  # [batch, pos] the model's own σ (LayerNorm) or rms (RMSNorm) of x, from its norm


def norm_input(model: Transformer, batch: PaddedBatch, layer: int) -> NormInput:
    """Block `layer`'s norm input for the padded batch, and the scale the model's own norm divided it by."""
    name, scale = norm_input_stage(model, layer), stage_name("ln1.scale", layer)
    _, trace = model.run_with_trace(batch.tokens, [name, scale], padding_mask=batch.real)
    return NormInput(trace[name].double(), trace[scale].double())


@dataclass(frozen=True)
class NormStatistics:
    ln_mean: torch.Tensor  # [batch, pos] over d_model
    ln_sigma: torch.Tensor  # [batch, pos] √(var + eps)
    rms: torch.Tensor  # [batch, pos] √(mean x² + eps)
    bn_mean: torch.Tensor  # [d_model] over the real tokens of the batch
    bn_sigma: torch.Tensor  # [d_model] √(var + eps), the biased variance as BatchNorm in training
    layer_norm: torch.Tensor  # [batch, pos, d_model] (x − ln_mean) / ln_sigma
    rms_norm: torch.Tensor  # [batch, pos, d_model] x / rms
    batch_norm: torch.Tensor  # [batch, pos, d_model] (x − bn_mean) / bn_sigma


def statistics(x: torch.Tensor, real: torch.Tensor, eps: float) -> NormStatistics:
    """The three normalisations of x [batch, pos, d_model]; BatchNorm counts only the `real` [batch, pos] tokens."""
    ln_mean = x.mean(-1)  # [batch, pos]
    ln_sigma = (x - ln_mean[..., None]).pow(2).mean(-1).add(eps).sqrt()
    rms = x.pow(2).mean(-1).add(eps).sqrt()
    tokens = x[real]  # [token, d_model]: every real token of the batch, no padding
    bn_mean = tokens.mean(0)  # [d_model]
    bn_sigma = (tokens - bn_mean).pow(2).mean(0).add(eps).sqrt()
    return NormStatistics(
        ln_mean, ln_sigma, rms, bn_mean, bn_sigma,
        layer_norm=(x - ln_mean[..., None]) / ln_sigma[..., None],
        rms_norm=x / rms[..., None],
        batch_norm=(x - bn_mean) / bn_sigma,
    )


@dataclass(frozen=True)
class SwapChange:
    """How much sentence 1's normalised vectors move when sentence 2 is replaced: max |Δ| per token [pos]."""

    layer_norm: torch.Tensor
    rms_norm: torch.Tensor
    batch_norm: torch.Tensor


def swap_change(before: NormStatistics, after: NormStatistics, n_tokens: int) -> SwapChange:
    """Sentence 1 (batch row 0, its first n_tokens positions) under two batches that differ only in row 1."""
    def moved(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return (a[0, :n_tokens] - b[0, :n_tokens]).abs().amax(-1)  # [pos]

    return SwapChange(moved(before.layer_norm, after.layer_norm), moved(before.rms_norm, after.rms_norm),
                      moved(before.batch_norm, after.batch_norm))
