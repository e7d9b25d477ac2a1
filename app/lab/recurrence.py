"""POST /api/lab/recurrence: a GRU language model run step by step beside the chosen Transformer, on one sentence.

Measured (lab/recurrence.py): the GRU's N sequential steps and the Transformer's L block passes, each timed; the
influence of every input embedding on the last position's state, ‖∂h_N/∂x_i‖_F, for both; both models'
next-token loss. The recurrent model reads tiny-gpt's tokens, so the chosen model must too.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from app import errors
from app.lab.common import Build, Experiment, LabContext, LabRun, rounded
from app.schemas import TextInput, TokenOut
from app.tokenizing import tokens_out
from checkpoints.recurrent import LoadedRecurrent, load_recurrent
from lab import recurrence

MAX_COPIES = 512  # the exact gradient runs the sentence once per dimension of the Transformer's last stream
NEEDS_DECODER = ("This experiment compares a recurrent model's next-token predictions with a Transformer's, so it "
                 "needs a decoder-only model that reads tiny-gpt's tokens (tiny-gpt or a pe-* model).")


@functools.cache
def shipped() -> LoadedRecurrent:
    """The recurrent model in model/weights/recurrent-gru (loaded once)."""
    return load_recurrent()


class RecurrenceLabRequest(TextInput):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"model": "pe-rope", "text": "The animal didn't cross the street because it was too tired."},
    ]})


class ModelFacts(BaseModel):
    name: str
    parameters: int
    tokens_seen: int | None = Field(description="Training tokens (None where the model's files do not say).")


class StepsOut(BaseModel):
    recurrent_steps: int = Field(description="N: the loop ran once per token, each step waiting for the one before.")
    transformer_passes: int = Field(description="L: one pass per block, each over all N positions at once.")
    recurrent_step_ms: list[float] = Field(description="[pos] the time of each recurrent step, in milliseconds.")
    transformer_block_ms: list[float] = Field(description="[layer] the time of each block, in milliseconds.")


class InfluenceOut(BaseModel):
    distance: list[int] = Field(description="[pos] N − 1 − i: how many tokens before the last one token i stands.")
    recurrent: list[float] = Field(description="[pos] ‖∂h_N/∂x_i‖_F: the GRU's last hidden state against the input "
                                               "embedding of token i.")
    transformer: list[float] = Field(description="[pos] ‖∂h_N/∂x_i‖_F: the last block's output at the last position "
                                                 "against the token embedding of token i.")


class LossOut(BaseModel):
    recurrent: list[float] = Field(description="[pos − 1] −log p(token i+1 | tokens ≤ i), nats.")
    transformer: list[float]
    recurrent_mean: float
    transformer_mean: float
    uniform: float = Field(description="ln(vocabulary size): the loss of a uniform guess.")


class RecurrenceLabOut(BaseModel):
    model: str
    tokens: list[TokenOut]
    recurrent: ModelFacts
    transformer: ModelFacts
    steps: StepsOut
    influence: InfluenceOut
    loss: LossOut
    max_tokens: int


def check_model(context: LabContext) -> None:
    resolved = context.model
    if resolved.cfg.architecture != "decoder" or not resolved.cfg.lm_head:
        raise errors.not_in_model(NEEDS_DECODER)
    if not recurrence.same_tokens(shipped().tokenizer, resolved.loaded.tokenizer):
        raise errors.invalid_option("model", f"'{resolved.name}' cuts text into other tokens than the recurrent "
                                             "model, so the two cannot be compared on one sentence — pick tiny-gpt "
                                             "or a pe-* model.")
    if resolved.cfg.d_model > MAX_COPIES:
        raise errors.too_much_work("model", resolved.cfg.d_model, MAX_COPIES,
                                   "copies of the sentence (one per dimension of its last stream)")


def plan(context: LabContext, request: RecurrenceLabRequest) -> Build:
    check_model(context)
    resolved, rnn = context.model, shipped()

    def build(lab_run: LabRun) -> dict[str, Any]:
        tokens = lab_run.tokens.tokens
        if len(tokens) > recurrence.MAX_TOKENS:
            raise errors.too_many_tokens("text", len(tokens), recurrence.MAX_TOKENS)
        if len(tokens) < 2:
            raise errors.text_too_short("Your sentence is a single token: type at least two, so that one token "
                                        "can be predicted from another.")
        measured = recurrence.recurrence(rnn.model, resolved.model, [t.id for t in tokens])
        n = len(tokens)
        rnn_training = rnn.meta.get("training", {})
        transformer_training = resolved.loaded.meta.get("training", {})
        return {
            "model": resolved.name, "tokens": tokens_out(tokens), "max_tokens": recurrence.MAX_TOKENS,
            "recurrent": {"name": rnn.meta.get("name", "recurrent-gru"), "parameters": rnn.model.parameter_count(),
                          "tokens_seen": rnn_training.get("tokens_seen")},
            "transformer": {"name": resolved.name, "parameters": sum(p.numel() for p in resolved.model.parameters()),
                            "tokens_seen": transformer_training.get("tokens_seen")},
            "steps": {"recurrent_steps": len(measured.rnn_step_seconds),
                      "transformer_passes": len(measured.transformer_block_seconds),
                      "recurrent_step_ms": rounded([1000 * s for s in measured.rnn_step_seconds], 4),
                      "transformer_block_ms": rounded([1000 * s for s in measured.transformer_block_seconds], 4)},
            "influence": {"distance": [n - 1 - i for i in range(n)],
                          "recurrent": [float(f"{v:.4g}") for v in measured.rnn_influence.tolist()],
                          "transformer": [float(f"{v:.4g}") for v in measured.transformer_influence.tolist()]},
            "loss": {"recurrent": rounded(measured.rnn_loss.tolist(), 4),
                     "transformer": rounded(measured.transformer_loss.tolist(), 4),
                     "recurrent_mean": round(float(measured.rnn_loss.mean()), 4),
                     "transformer_mean": round(float(measured.transformer_loss.mean()), 4),
                     "uniform": round(math.log(resolved.cfg.vocab_size), 4)},
        }

    return build


EXPERIMENT = Experiment(
    name="recurrence", method="POST", request=RecurrenceLabRequest,
    response=RecurrenceLabOut, plan=plan, refuses=("encoder", "encoder-decoder"), measured=True,
    summary="Recurrence against attention, on one sentence: a GRU language model trained on the same text runs\n"
            "step by step (N steps, each waiting for the last) beside the Transformer's L block passes; the\n"
            "influence of every input embedding on the last position's state, ‖∂h_N/∂x_i‖_F, for both; and both\n"
            "models' next-token loss.",
)
