"""Why decoder-only won, on one sentence: the decoder's loss at every position from one forward pass
(measured); BERT's seeded 15% masked positions and T5's span counts (formulas); FLOPs ≈ 2 · N per
token and training signals per pass; generation cost with and without a cache (formulas).

POST /api/lab/objectives: causal LM, masked LM and span corruption on one sentence, at the same compute.

Measured: the decoder's loss at every position, from its own logits (one forward pass). From the formulas,
labelled so: the masked positions (seeded) and span counts, FLOPs per pass and generation cost.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from app import errors
from app.lab.common import Experiment, check_decoder_only, rounded, summary_of
from app.pipeline import Build, Context, Run
from app.schemas import Int, TextInput, TokenOut
from app.tokenizing import tokens_out
from lab import objectives

NEEDS_DECODER = ("This experiment measures the next-token loss at every position of your sentence, so it needs a "
                 "decoder-only model (like tiny-gpt or smollm2).")
NOT_ENCODER_DECODER = ("This model is an encoder-decoder: its decoder predicts a separate target text, not your "
                       "sentence.")


class ObjectivesLabRequest(TextInput):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"model": "tiny-gpt", "text": "我爱北京天安门广场。", "seed": 0},
    ]})

    seed: Int = Field(0, ge=0, le=2**31 - 1, description="Chooses the masked positions: same seed, same positions.")


class CausalOut(BaseModel):
    losses: list[float] = Field(description="−log p(token i+1 | tokens ≤ i) in nats, one per position i < n − 1.")
    mean: float
    signals: int


class MaskedOut(BaseModel):
    seed: int
    rate: float
    candidates: int = Field(description="The sentence's own tokens (an added start token is never masked).")
    positions: list[int] = Field(description="Token positions chosen: max(1, round(rate · candidates)) of them.")
    signals: int


class SpanOut(BaseModel):
    tokens: int
    corrupted: int
    spans: int
    input_sentinels: int
    target_sentinels: int
    input_length: int
    target_length: int
    rate: float
    mean_span: int


class ComputeOut(BaseModel):
    attention: int
    mlp: int
    norms: int
    non_embedding: int = Field(description="N = attention + MLP + norms, from the model's weights.")
    total: int
    flops_per_token: int = Field(description="2 · N (Kaplan et al. 2020).")
    flops_per_pass: int = Field(description="2 · N · n for the n tokens read.")
    unembedding_flops_per_token: int = Field(description="2 · d_model · vocab_size, left out of 2 · N.")


class SignalRow(BaseModel):
    objective: str = Field(description="causal, masked or span.")
    signals: int
    tokens_read: int
    flops: int
    signals_per_gflop: float


class GenerationOut(BaseModel):
    new_tokens: list[int]
    cached: list[int] = Field(description="n + m − 1 positions: the prompt once, then each new token but the last.")
    recomputed: list[int] = Field(description="m · n + m (m − 1) / 2: every position again at every step.")


class ObjectivesLabOut(BaseModel):
    model: str
    tokens: list[TokenOut]
    causal: CausalOut = Field(description="Measured from the model's logits.")
    masked: MaskedOut = Field(description="From BERT's recipe; no masked-LM head runs, so no loss values.")
    span: SpanOut = Field(description="From T5's formula: counts only.")
    compute: ComputeOut = Field(description="From the formulas, with N from the model's weights.")
    signals: list[SignalRow] = Field(description="From the formulas: supervised positions per pass and per GFLOP.")
    generation: GenerationOut = Field(description="From the formulas, for this prompt's n and m = 1 … 32.")


def plan(context: Context, request: ObjectivesLabRequest) -> Build:
    resolved = context.model
    check_decoder_only(resolved, NEEDS_DECODER, NOT_ENCODER_DECODER)

    def build(run: Run) -> dict[str, Any]:
        tokens = run.inputs.tokens
        start = 1 if tokens[0].start == tokens[0].end else 0  # an added start token: an empty span, never masked
        text_positions = list(range(start, len(tokens)))
        if len(text_positions) < 2:
            raise errors.text_too_short("Your sentence is a single token: type at least two, so that one token "
                                        "can be predicted from another.")
        forward = run.trace()
        report = objectives.objectives_report(resolved.model, forward.output[0], [t.id for t in tokens],
                                              text_positions, request.seed)
        causal = report["causal"]
        return {"model": resolved.name, "tokens": tokens_out(tokens), **report,
                "causal": {**causal, "losses": rounded(causal["losses"])}}

    return build


EXPERIMENT = Experiment(
    name="objectives", method="POST", request=ObjectivesLabRequest,
    response=ObjectivesLabOut, plan=plan, refuses=("encoder", "encoder-decoder"),
    # exact on a hybrid: the losses are the forward pass's logits, N counts every weight (DeltaNet's with the
    # attention's), and the generation counts are positions read, whatever mixes the tokens
    hybrid=True,
    summary=summary_of(__doc__),
)
