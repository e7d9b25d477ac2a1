"""LayerNorm against BatchNorm (and RMSNorm) on a real batch: `text` and `other`, right-padded to one
length, through the model to block `layer`'s norm input. LayerNorm's mean and σ per token (over
d_model), RMSNorm's rms per token, BatchNorm's mean and σ per feature (over the real tokens of the
batch, pads left out); and how far sentence 1's normalised vectors move when `swap` replaces `other`.

POST /api/lab/norm-statistics: LayerNorm, RMSNorm and BatchNorm on the same batch of two real sentences."""

from __future__ import annotations

from typing import Any

import torch
from pydantic import BaseModel, ConfigDict, Field

from app import errors
from app.lab.common import Experiment, rounded, summary_of
from app.pipeline import Build, Context, Run
from app.request_checks import check_layer, stack_of
from app.resolve import Resolved
from app.schemas import Int, Text, TextInput, TokenOut
from app.tokenizing import encode_text, tokens_out
from lab import norm_statistics as norms

MAX_CHARS = 512  # the other two sentences: as long as the text may be
MAX_TOKENS = 128

WHY_NOT_ENCODER_DECODER = ("A translation model reads a source and writes a target: two stacks, two batches. "
                           "Pick a decoder (like tiny-gpt) or an encoder (like minilm) for one batch of sentences.")


class NormStatisticsLabRequest(TextInput):
    """Sentence 1 is `text`; `other` is sentence 2; `swap` replaces sentence 2 in a second batch."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"model": "tiny-gpt", "text": "The cat sat on the mat.", "other": "Dogs bark.", "layer": 1},
    ]})

    other: Text = Field("Dogs bark at night.", max_length=MAX_CHARS,
                       description="Sentence 2 of the batch (padded to sentence 1's length or the other way).")
    swap: Text = Field("我爱北京天安门广场。", max_length=MAX_CHARS,
                      description="Replaces sentence 2 in a second batch: does sentence 1's output change?")
    layer: Int = Field(0, ge=0, le=1024, description="The block whose first norm's input is read.")


class SentenceOut(BaseModel):
    tokens: list[TokenOut] = Field(description="The sentence's own tokens; the batch pads it on the right.")
    ln_mean: list[float | None] = Field(description="[pos] LayerNorm's mean over d_model; None at a pad position.")
    ln_sigma: list[float | None] = Field(description="[pos] LayerNorm's σ = √(var + eps) over d_model.")
    rms: list[float | None] = Field(description="[pos] RMSNorm's √(mean x² + eps) over d_model.")


class NormStatisticsLabOut(BaseModel):
    model: str
    norm: str = Field(description="The norm the model itself uses: layernorm or rmsnorm.")
    norm_placement: str = Field(description="pre: the norm reads resid_pre; post: resid_pre + attention.")
    layer: int
    d_model: int
    width: int = Field(description="The padded length of the batch: positions per sentence.")
    eps: float
    sentences: list[SentenceOut] = Field(description="Sentence 1 and 2 of the batch.")
    real_tokens: int = Field(description="Tokens BatchNorm averages over: the real ones of both sentences.")
    pad_positions: int = Field(description="Pad positions in the batch, left out of every statistic.")
    bn_mean: list[float] = Field(description="[d_model] BatchNorm's mean per feature over the batch's real tokens.")
    bn_sigma: list[float] = Field(description="[d_model] BatchNorm's σ per feature (biased variance + eps).")
    swap_tokens: list[TokenOut] = Field(description="The sentence that replaced sentence 2.")
    swap_layer_norm: list[float] = Field(description="[pos of sentence 1] max |Δ| of its LayerNorm output.")
    swap_rms_norm: list[float] = Field(description="[pos of sentence 1] max |Δ| of its RMSNorm output.")
    swap_batch_norm: list[float] = Field(description="[pos of sentence 1] max |Δ| of its BatchNorm output.")
    model_scale_diff: float = Field(description="max |the model's own norm scale − this σ (LayerNorm) or rms "
                                                "(RMSNorm)| over the real tokens: the statistics are the model's.")


def check_plain_batch(resolved: Resolved, chat: bool) -> None:
    """A batch of plain sentences through one stack: no encoder-decoder (two stacks, two batches), no chat template."""
    if resolved.cfg.architecture == "encoder-decoder":
        raise errors.not_in_model(WHY_NOT_ENCODER_DECODER)
    if chat:
        raise errors.invalid_option("chat", "the batch holds plain sentences; turn the chat template off.")


def sentence_ids(resolved: Resolved, text: str, field: str) -> list[int]:
    """Token ids of one more sentence, with the start token the model expects, within the token limits."""
    if text == "":
        raise errors.empty_text(field)
    ids = [t.id for t in encode_text(resolved.loaded, text)]
    limit = min(MAX_TOKENS, resolved.cfg.n_ctx)
    if not ids:
        raise errors.empty_text(field)
    if len(ids) > limit:
        raise errors.too_many_tokens(field, len(ids), limit)
    return ids


def _per_position(values: torch.Tensor, real: torch.Tensor) -> list[float | None]:
    return [round(float(v), 6) if r else None for v, r in zip(values.tolist(), real.tolist(), strict=True)]


def plan(context: Context, request: NormStatisticsLabRequest) -> Build:
    resolved = context.model
    cfg = resolved.cfg
    check_plain_batch(resolved, request.chat)
    check_layer(request.layer, stack_of(resolved, None)[1])  # the block exists (any kind: its norm reads the stream)
    other, swap = sentence_ids(resolved, request.other, "other"), sentence_ids(resolved, request.swap, "swap")

    def build(run: Run) -> dict[str, Any]:
        first_tokens = run.inputs.tokens
        first = [t.id for t in first_tokens]
        device = resolved.model.device
        batch, swapped = norms.padded_batch([first, other], device), norms.padded_batch([first, swap], device)
        read = norms.norm_input(resolved.model, batch, request.layer)
        stats = norms.statistics(read.x, batch.real, cfg.norm_eps)
        after = norms.statistics(norms.norm_input(resolved.model, swapped, request.layer).x, swapped.real, cfg.norm_eps)
        change = norms.swap_change(stats, after, len(first))
        ours = stats.ln_sigma if cfg.norm == "layernorm" else stats.rms
        context.budget.check([stats.bn_mean, stats.bn_sigma, stats.ln_mean, stats.ln_sigma, stats.rms])
        per_token = ("ln_mean", "ln_sigma", "rms")
        sentences = [{"tokens": tokens_out(toks),
                      **{k: _per_position(getattr(stats, k)[row], batch.real[row]) for k in per_token}}
                     for row, toks in enumerate([first_tokens, encode_text(resolved.loaded, request.other)])]
        return {
            "model": resolved.name, "norm": cfg.norm, "norm_placement": cfg.norm_placement, "layer": request.layer,
            "d_model": cfg.d_model, "width": batch.tokens.shape[1], "eps": cfg.norm_eps, "sentences": sentences,
            "real_tokens": int(batch.real.sum()), "pad_positions": int((~batch.real).sum()),
            "bn_mean": rounded(stats.bn_mean.tolist()), "bn_sigma": rounded(stats.bn_sigma.tolist()),
            "swap_tokens": tokens_out(encode_text(resolved.loaded, request.swap)),
            "swap_layer_norm": [float(v) for v in change.layer_norm],
            "swap_rms_norm": [float(v) for v in change.rms_norm],
            "swap_batch_norm": [float(v) for v in change.batch_norm],
            "model_scale_diff": float((read.model_scale - ours)[batch.real].abs().max()),
        }

    return build


EXPERIMENT = Experiment(
    name="norm_statistics", method="POST", request=NormStatisticsLabRequest, response=NormStatisticsLabOut,
    plan=plan, refuses=("encoder-decoder",), hybrid=True,  # the model's own (padded) forward pass, read at a norm
    summary=summary_of(__doc__),
)
