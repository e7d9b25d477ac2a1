"""POST /api/predict: the next-token table, the distribution sampled from, and a few sampled tokens (seeded)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from app.schemas.fields import INTEGER, NUMBER, Float, Int
from app.schemas.inputs import Intervenable
from app.schemas.outputs import TokenOut
from app.schemas.trace import Prediction


class PredictRequest(Intervenable):
    model_config = ConfigDict(json_schema_extra={"examples": [
        {"model": "tiny-gpt", "text": "The cat sat on the", "top_k": 10, "temperature": 1.0, "seed": 0,
         "max_new_tokens": 8},
    ]})

    top_k: Int = Field(10, ge=1, le=100, description=(
        "Rows of the `top_k` table: the most likely tokens of softmax(logits / temperature) over the whole "
        "vocabulary. It does not cut sampling (that is `sample_top_k`): `top_k` keeps the meaning it has in "
        "/api/trace, a table size, so scripts that ask for a longer table do not change what is sampled."))
    temperature: Float = Field(1.0, ge=0.01, le=10, description=(
        "Divides the logits before the softmax, for the table and for sampling. Below 0.01 the softmax is an "
        "argmax in float32."))
    sample_top_k: Annotated[int, Field(ge=1, le=1_000_000), INTEGER] | None = Field(None, description=(
        "Sampling: keep only the k most likely tokens (tokens tied with the k-th stay), renormalised. Omitted: "
        "all. The same step as `top_k` of /api/lab/sampling and of the decoding loop (model/generate.py)."))
    top_p: Annotated[float, Field(gt=0, le=1), NUMBER] | None = Field(None, description=(
        "Sampling, after sample_top_k: keep the smallest most-likely set whose mass reaches p, renormalised. "
        "Omitted: all. The same step as `top_p` of /api/lab/sampling."))
    sample_rows: Int = Field(100, ge=1, le=1_000_000, description=(
        "Rows of `sampling`: the most likely tokens of the distribution sampled from. `sampling.kept` and "
        "`sampling.unlisted_prob` say what is not listed."))
    seed: Annotated[int, Field(ge=0, le=2**31 - 1), INTEGER] | None = Field(
        None, description="Same seed, same sampled text. Omitted: random.")
    max_new_tokens: Int = Field(8, ge=0, le=64, description=(
        "Tokens to sample, each from the distribution `sampling` describes (the first one exactly from it)."))


class Generated(BaseModel):
    seed: int
    tokens: list[TokenOut]
    text: str


class SamplingOut(BaseModel):
    """The distribution the next token is drawn from: softmax(logits / temperature), then top-k, then top-p."""

    temperature: float
    top_k: int | None = Field(description="The request's sample_top_k (None: no cut).")
    top_p: float | None = Field(description="The request's top_p (None: no cut).")
    kept: int = Field(description="Tokens with a non-zero probability after the three steps.")
    ids: list[int] = Field(description="The most likely kept tokens (at most sample_rows), most likely first.")
    probs: list[float] = Field(description="Their probabilities in the distribution sampled from.")
    unlisted_prob: float = Field(description="Mass of the kept tokens not listed (0 when every kept one is).")


class PredictOut(BaseModel):
    model: str
    tokens: list[TokenOut]
    target_tokens: list[TokenOut] | None = None
    temperature: float
    top_k: list[Prediction] = Field(description=(
        "The model's full distribution at this temperature, softmax(logits / temperature): its `top_k` most "
        "likely tokens. No top-k/top-p cut: compare with `sampling`, what the draws come from."))
    rest_prob: float = Field(description="Probability of every token outside top_k (top_k + rest = 1).")
    sampling: SamplingOut
    generated: Generated
    loss: float | None = Field(None, description="Mean next-token cross-entropy of the text (decoder input), nats.")
