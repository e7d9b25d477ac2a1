"""POST /api/predict: its request and answer, and the builder: the next-token distribution, the distribution
sampled from, and a few sampled tokens (seeded)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from analysis import readouts
from app import errors
from app.answers import Builder
from app.answers.request_checks import interventions_for
from app.answers.trace import next_tokens, text_loss
from app.inference_pool import TraceRun
from app.resolve import Resolved
from app.schemas import INTEGER, NUMBER, Float, Int, Intervenable, Prediction, TokenOut
from app.tokenizing import special_token, token_text, tokens_out
from model.generate import generate
from model.tokenizer import Token


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


def check_generative(resolved: Resolved) -> None:
    if resolved.cfg.architecture == "encoder" or not resolved.cfg.lm_head:
        raise errors.not_generative()


def plan(resolved: Resolved, request: PredictRequest, seed: int, max_len: int) -> Builder:
    check_generative(resolved)
    return lambda run: build_prediction(resolved, run, request, seed, max_len)


def build_prediction(resolved: Resolved, run: TraceRun, request: PredictRequest, seed: int,
                     max_len: int) -> dict[str, Any]:
    table = next_tokens(resolved, run, request.top_k, request.temperature)  # from the cached logits
    enc_dec = resolved.cfg.architecture == "encoder-decoder"
    stop = special_token(resolved.loaded, "eos_token")
    new_ids = generate(
        resolved.model, [t.id for t in run.tokens],
        target_ids=[t.id for t in run.target_tokens] if enc_dec and run.target_tokens else None,
        max_new_tokens=request.max_new_tokens, temperature=request.temperature, top_k=request.sample_top_k,
        top_p=request.top_p, seed=seed,
        max_len=max_len, stop_id=stop.id if stop else None,
        edits=interventions_for(resolved, request.interventions),
    )
    generated = [Token(i, token_text(resolved.loaded, i), 0, 0).to_dict() for i in new_ids]
    text = resolved.loaded.tokenizer.decode(new_ids) if new_ids else ""
    out: dict[str, Any] = {
        "model": resolved.name, "tokens": tokens_out(run.tokens), "temperature": request.temperature,
        "top_k": table["top_k"], "rest_prob": table["rest"],
        "sampling": {
            "temperature": request.temperature, "top_k": request.sample_top_k, "top_p": request.top_p,
            **readouts.sampling_readout(run.output[0, -1], request.temperature, request.sample_top_k,
                                        request.top_p, request.sample_rows),
        },
        "generated": {"seed": seed, "tokens": generated, "text": text},
        "loss": text_loss(run),
    }
    if run.target_tokens is not None:
        out["target_tokens"] = tokens_out(run.target_tokens)
    return out
