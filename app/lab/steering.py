"""Steering with a difference vector: the mean residual stream of prompts A minus prompts B at a block's
input, added α times at every position while the model writes greedily; the continuation with and
without it, and the first step's next-token distribution before and after.

POST /api/lab/steering: the mean residual stream of prompts A minus B at block L's input, added α times at every
position while the model writes greedily: the text with and without it, and the first step's distribution moved
(lab/steering.py)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from app import errors
from app.lab.common import MAX_FORWARDS, Experiment, rounded, summary_of
from app.pipeline import Build, Context, Run
from app.request_checks import check_layer
from app.resolve import Resolved
from app.schemas import Float, Int, Text, TextInput, TokenOut, VocabToken
from app.tokenizing import encode_text, token_text, tokens_out, vocab_token
from lab.steering import steer

MAX_PROMPTS = 8  # per set
MAX_PROMPT_CHARS = 300
MAX_PROMPT_TOKENS = 64
MAX_NEW_TOKENS = 32
Prompt = Annotated[Text, Field(description="One prompt (at least two tokens: the first position is left out).")]


class SteeringLabRequest(TextInput):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"model": "smollm2", "text": "Yesterday I went to the", "layer": 6, "alpha": 1.0, "max_new_tokens": 12,
         "a": ["Je suis allé au marché ce matin.", "Il fait très beau aujourd'hui."],
         "b": ["I went to the market this morning.", "The weather is very nice today."]},
    ]})

    a: list[Prompt] = Field(["Je suis allé au marché ce matin."], min_length=1, max_length=MAX_PROMPTS,
                            description="Set A: 1 to 8 prompts (the + side; omitted: one French sentence).")
    b: list[Prompt] = Field(["I went to the market this morning."], min_length=1, max_length=MAX_PROMPTS,
                            description="Set B: 1 to 8 prompts (the − side; omitted: the same sentence in English).")
    layer: Int = Field(0, ge=0, le=1024, description="The block whose input (resid_pre) is read and steered.")
    alpha: Float = Field(1.0, ge=-100, le=100, description="The vector is added α times (0: the plain run).")
    max_new_tokens: Int = Field(12, ge=1, le=MAX_NEW_TOKENS, description="Greedy steps of each continuation.")


class Continuation(BaseModel):
    ids: list[int]
    text: str


class MovedToken(VocabToken):
    before: float = Field(description="Its probability at the first generated step without the vector ...")
    after: float = Field(description="... and with α times it.")


class SteeringLabOut(BaseModel):
    model: str
    tokens: list[TokenOut] = Field(description="The prompt continued.")
    layer: int
    alpha: float
    forwards: int = Field(description="Forward passes charged: one per prompt of A and B, two per new token.")
    vector_norm: float = Field(description="‖mean(A) − mean(B)‖ at the input of the layer.")
    typical_norm: float = Field(description="The mean ‖residual‖ there over the prompts' positions (after the first).")
    plain: Continuation
    steered: Continuation
    moved: list[MovedToken] = Field(description="The first step's most likely tokens, with and without the vector.")


def prompt_ids(resolved: Resolved, side: str, prompts: list[str]) -> list[list[int]]:
    """Each prompt's ids as the model reads a text (its start token first, if it has one), checked."""
    limit = min(MAX_PROMPT_TOKENS, resolved.cfg.n_ctx)
    out = []
    for index, prompt in enumerate(prompts):
        field = f"prompt {index + 1} of set {side}"
        if not prompt.strip():
            raise errors.empty_text(field)
        if len(prompt) > MAX_PROMPT_CHARS:
            raise errors.text_too_long(field, MAX_PROMPT_CHARS, len(prompt))
        ids = [t.id for t in encode_text(resolved.loaded, prompt)]
        if len(ids) > limit:
            raise errors.too_many_tokens(field, len(ids), limit)
        if len(ids) < 2:
            raise errors.text_too_short(f"The {field} is a single token: the first position is left out of the "
                                        "mean, so type at least two tokens.")
        out.append(ids)
    return out


def plan(context: Context, request: SteeringLabRequest) -> Build:
    resolved = context.model
    architecture = resolved.cfg.architecture
    if architecture == "encoder" or not resolved.cfg.lm_head:
        raise errors.not_generative()
    if architecture == "encoder-decoder":
        raise errors.not_in_model("Steering adds a vector to the residual stream of a decoder that writes your text; "
                                  "this model is an encoder-decoder, whose decoder writes a separate target text. "
                                  "Pick a decoder-only model (like tiny-gpt or smollm2).")
    check_layer(request.layer, resolved.cfg.n_layers)
    forwards = len(request.a) + len(request.b) + 2 * request.max_new_tokens
    if forwards > MAX_FORWARDS:
        raise errors.too_much_work("max_new_tokens", forwards, MAX_FORWARDS,
                                   "forward passes (prompts in A and B + 2 × max_new_tokens)")
    a, b = prompt_ids(resolved, "A", request.a), prompt_ids(resolved, "B", request.b)

    def build(run: Run) -> dict[str, Any]:
        tokens = run.inputs.tokens
        out = steer(resolved.model, a, b, request.layer, request.alpha, [t.id for t in tokens],
                    request.max_new_tokens)
        def text(ids: list[int]) -> str:
            return "".join(token_text(resolved.loaded, i) for i in ids)

        before, after = rounded(out.plain_probs[out.top_ids].tolist()), rounded(out.steered_probs[out.top_ids].tolist())
        return {
            "model": resolved.name, "tokens": tokens_out(tokens), "layer": request.layer, "alpha": request.alpha,
            "forwards": forwards, "vector_norm": round(out.vector_norm, 6), "typical_norm": round(out.typical_norm, 6),
            "plain": {"ids": out.plain_ids, "text": text(out.plain_ids)},
            "steered": {"ids": out.steered_ids, "text": text(out.steered_ids)},
            "moved": [vocab_token(resolved.loaded, i, before=p, after=q)
                      for i, p, q in zip(out.top_ids, before, after, strict=True)],
        }

    return build


EXPERIMENT = Experiment(
    name="steering", method="POST", request=SteeringLabRequest, response=SteeringLabOut,
    plan=plan, refuses=("encoder", "encoder-decoder"), hybrid=True,
    summary=summary_of(__doc__),
)
