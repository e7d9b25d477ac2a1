"""Recurrence against attention, on one sentence: a GRU language model trained on the same text runs
step by step (N steps, each waiting for the last) beside a shipped Transformer's L block passes; the
influence of every input embedding on the last position's state, ‖∂h_N/∂x_i‖_F, for both; and both
models' next-token loss.

POST /api/lab/recurrence: a GRU language model run step by step beside a Transformer, on one sentence.

Measured (lab/recurrence.py): the GRU's N sequential steps and the Transformer's L block passes, each timed; the
influence of every input embedding on the last position's state, ‖∂h_N/∂x_i‖_F, for both; both models'
next-token loss. The GRU reads the tokens of tiny-gpt and the pe-* family, so the Transformer beside it is one of
those, loaded from model/weights (pe-rope by default): the page's model does not change this panel.
"""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app import errors
from app.lab.common import Experiment, rounded, summary_of
from app.pipeline import Build, Context, Run
from app.schemas import Text, TokenOut
from app.tokenizing import encode_text, tokens_out
from lab import recurrence

MAX_CHARS = 2000  # 64 tokens are a few hundred characters: longer text is refused before it is tokenized


class RecurrenceLabRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"text": "The animal didn't cross the street because it was too tired.", "transformer": "pe-rope"},
    ]})

    text: Text = Field(description="Any Unicode text: up to 64 tokens with the start token.")
    transformer: Literal["pe-rope", "tiny-gpt"] = Field(
        "pe-rope", description="The shipped Transformer beside the GRU (both read the GRU's tokens): pe-rope was "
                               "trained on the same kind of rows, tiny-gpt is larger and trained longer.")


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
    shape: ShapeOut | None = Field(description="What the GRU's curve does with distance on this sentence (the start "
                                               "token left out); None under 3 distances.")
    reference: ReferenceOut = Field(description="The GRU's curve averaged over the reference sentences.")


class ShapeOut(BaseModel):
    near: float = Field(description="The GRU's influence one token back.")
    low: float = Field(description="Its smallest value, and low_at, the distance where it is.")
    low_at: int
    far: float = Field(description="Its mean over the farthest third, distances far_from to far_to.")
    far_from: int
    far_to: int
    rises: bool = Field(description="Lowest before the farthest third, which is at least 1.5× higher: a U.")


class ReferenceOut(BaseModel):
    distance: list[int] = Field(description="[D] d = 1 … D tokens back (the start token left out).")
    recurrent: list[float] = Field(description="[D] the GRU's influence d tokens back, geometric mean over the "
                                               "reference sentences that reach d.")
    sentences: list[int] = Field(description="[D] how many reference sentences reach d.")
    shape: ShapeOut


class LossOut(BaseModel):
    recurrent: list[float] = Field(description="[pos − 1] −log p(token i+1 | tokens ≤ i), nats.")
    transformer: list[float]
    recurrent_mean: float
    transformer_mean: float
    uniform: float = Field(description="ln(vocabulary size): the loss of a uniform guess.")


class RecurrenceLabOut(BaseModel):
    tokens: list[TokenOut]
    recurrent: ModelFacts
    transformer: ModelFacts
    steps: StepsOut
    influence: InfluenceOut
    loss: LossOut
    max_tokens: int


def plan(context: Context, request: RecurrenceLabRequest) -> Build:
    if request.text == "":
        raise errors.empty_text()
    if len(request.text) > MAX_CHARS:
        raise errors.text_too_long("text", MAX_CHARS, len(request.text))
    rnn, transformer = recurrence.shipped_recurrent(), recurrence.shipped_transformer(request.transformer)
    tokens = encode_text(transformer, request.text)  # the start token, then the text: the GRU's tokens too
    if len(tokens) > recurrence.MAX_TOKENS:
        raise errors.too_many_tokens("text", len(tokens), recurrence.MAX_TOKENS)
    if len(tokens) < 2:
        raise errors.text_too_short("Your sentence is a single token: type at least two, so that one token "
                                    "can be predicted from another.")

    def build(_: Run) -> dict[str, Any]:
        measured = recurrence.recurrence(rnn.model, transformer.model, [t.id for t in tokens])
        n = len(tokens)
        sentences = tuple(tuple(t.id for t in encode_text(transformer, s)) for s in recurrence.REFERENCE)
        reference, counts = recurrence.reference_curve(rnn.model, sentences)
        shape = recurrence.curve_shape(recurrence.by_distance(measured.rnn_influence))
        return {
            "tokens": tokens_out(tokens), "max_tokens": recurrence.MAX_TOKENS,
            "recurrent": {"name": rnn.meta.get("name", "recurrent-gru"), "parameters": rnn.model.parameter_count(),
                          "tokens_seen": rnn.meta.get("training", {}).get("tokens_seen")},
            "transformer": {"name": request.transformer,
                            "parameters": sum(p.numel() for p in transformer.model.parameters()),
                            "tokens_seen": transformer.meta.get("training", {}).get("tokens_seen")},
            "steps": {"recurrent_steps": len(measured.rnn_step_seconds),
                      "transformer_passes": len(measured.transformer_block_seconds),
                      "recurrent_step_ms": rounded([1000 * s for s in measured.rnn_step_seconds], 4),
                      "transformer_block_ms": rounded([1000 * s for s in measured.transformer_block_seconds], 4)},
            "influence": {"distance": [n - 1 - i for i in range(n)],
                          "recurrent": [float(f"{v:.4g}") for v in measured.rnn_influence.tolist()],
                          "transformer": [float(f"{v:.4g}") for v in measured.transformer_influence.tolist()],
                          "shape": shape_out(shape),
                          "reference": {"distance": list(range(1, len(reference) + 1)),
                                        "recurrent": [float(f"{v:.4g}") for v in reference], "sentences": counts,
                                        "shape": shape_out(recurrence.curve_shape(reference))}},
            "loss": {"recurrent": rounded(measured.rnn_loss.tolist(), 4),
                     "transformer": rounded(measured.transformer_loss.tolist(), 4),
                     "recurrent_mean": round(float(measured.rnn_loss.mean()), 4),
                     "transformer_mean": round(float(measured.transformer_loss.mean()), 4),
                     "uniform": round(math.log(transformer.model.cfg.vocab_size), 4)},
        }

    return build


def shape_out(shape: recurrence.Shape | None) -> dict[str, Any] | None:
    return None if shape is None else {**asdict(shape), "near": float(f"{shape.near:.4g}"),
                                       "low": float(f"{shape.low:.4g}"), "far": float(f"{shape.far:.4g}")}


EXPERIMENT = Experiment(
    name="recurrence", method="POST", request=RecurrenceLabRequest,
    response=RecurrenceLabOut, plan=plan, uses="nothing", measured=True,
    summary=summary_of(__doc__),
)
