"""The next-token distribution after temperature, top-k and top-p, and `draws` seeded draws from it
(the same seed gives the same draws).

POST /api/lab/sampling: the next-token distribution after temperature, top-k and top-p, and seeded draws."""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from app.lab.common import Experiment, summary_of
from app.pipeline import Build, Context, Run
from app.request_checks import check_generative
from app.schemas import INTEGER, NUMBER, Float, Int, TextInput, TokenOut, VocabToken
from app.tokenizing import token_text, tokens_out, vocab_token
from lab.sampling import sampling_steps


class SamplingLabRequest(TextInput):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"model": "tiny-gpt", "text": "The cat sat on the", "temperature": 0.8, "top_k": 20, "top_p": 0.9,
         "seed": 0, "draws": 20},
    ]})

    temperature: Float = Field(1.0, ge=0.01, le=10, description="Below 0.01 the softmax is an argmax in float32.")
    top_k: Annotated[int, Field(ge=1, le=100000), INTEGER] | None = Field(
        None, description="Keep the k most likely tokens (None: all).")
    top_p: Annotated[float, Field(gt=0, le=1), NUMBER] | None = Field(
        None, description="Then keep the smallest set whose mass reaches p.")
    seed: Int = Field(0, ge=0, le=2**31 - 1, description="Same seed, same draws.")
    draws: Int = Field(20, ge=1, le=10000, description="Independent draws of the next token.")
    show: Int = Field(20, ge=1, le=100, description="Rows of the table: the most likely tokens.")


class SampleRow(VocabToken):
    logit: float
    original: float
    tempered: float
    top_k: float
    final: float


class SamplingLabOut(BaseModel):
    model: str
    tokens: list[TokenOut]
    temperature: float
    top_k: int | None
    top_p: float | None
    seed: int
    rows: list[SampleRow]
    kept: dict[str, int] = Field(description="Tokens left with a non-zero probability after each step.")
    entropy: dict[str, float]
    draws: list[int] = Field(description="Every draw, in order (`draws` of them).")
    draw_text: list[str]
    counts: dict[str, int] = Field(description="How often each drawn id came up: every drawn id, summing to `draws`.")


def plan(context: Context, request: SamplingLabRequest) -> Build:
    resolved = context.model
    check_generative(resolved)

    def build(run: Run) -> dict[str, Any]:
        forward = run.trace()
        logits = forward.output[0, -1].float().cpu()  # [d_vocab] at the last position
        found = sampling_steps(logits, temperature=request.temperature, top_k=request.top_k, top_p=request.top_p,
                               show=request.show, draws=request.draws, seed=request.seed)
        rows = [vocab_token(resolved.loaded, i, logit=round(float(logits[i]), 4),
                            **{name: round(float(p[i]), 6) for name, p in found.steps.items()}) for i in found.order]
        return {
            "model": resolved.name, "tokens": tokens_out(forward.target_tokens or forward.tokens),
            "temperature": request.temperature, "top_k": request.top_k, "top_p": request.top_p, "seed": request.seed,
            "rows": rows, "kept": found.kept, "entropy": {name: round(e, 6) for name, e in found.entropy.items()},
            "draws": found.draws, "draw_text": [token_text(resolved.loaded, i) for i in found.draws],
            "counts": {str(i): c for i, c in Counter(found.draws).most_common()},
        }

    return build


EXPERIMENT = Experiment(
    name="sampling", method="POST", request=SamplingLabRequest, response=SamplingLabOut,
    plan=plan, refuses=("encoder",), hybrid=True,
    summary=summary_of(__doc__),
)
