"""Copy one activation of the clean prompt's run into the corrupted prompt's run (the residual stream,
attention or FFN output at one layer and position, or one head's output) and measure the logit
difference of the two answers, normalised: 0 = the corrupted run, 1 = the clean run. With the FFN
knock-out: p(clean answer) with each layer's FFN output zeroed.

POST /api/lab/activation-patching: copy one activation of a clean run into a corrupted run, at every layer and
position (or head), and see how much of the clean answer comes back; and the FFN knock-out on the clean run."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app import errors
from app.lab.common import Experiment, check_decoder_only, rounded, summary_of
from app.pipeline import Build, Context, Run
from app.resolve import Resolved
from app.schemas import Bool, Text, TextInput, TokenOut, VocabToken
from app.tokenizing import encode_text, one_token, tokens_out, vocab_token
from lab.activation_patching import (
    PER_LAYER_INPUTS,
    SameAnswers,
    SameDifference,
    grids_of,
    patching_forwards,
    run_patching,
)

# the work budget: patched copies × the prompt's tokens (SmolLM2, 6 tokens, every grid and the knock-out:
# 840 copies, 5,040 tokens)
MAX_PATCHED_TOKENS = 6000

NEEDS_DECODER = ("Activation patching here compares a decoder's next-token logits on two prompts, so it needs a "
                 "decoder-only model (like tiny-gpt or smollm2).")
NOT_ENCODER_DECODER = ("This model is an encoder-decoder: its decoder predicts a separate target text, and patching "
                       "across its two stacks is not implemented.")


class ActivationPatchingLabRequest(TextInput):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"model": "smollm2", "text": "The capital of France is", "corrupted": "The capital of Italy is",
         "clean_answer": " Paris", "corrupted_answer": " Rome", "grid": "ffn"},
    ]})

    corrupted: Text = Field(max_length=512, description="The corrupted prompt: as many tokens as `text` (the clean "
                                                       "prompt), e.g. one word changed.")
    clean_answer: Text | None = Field(None, max_length=64, description="The clean run's answer, exactly one token "
                                     "(default: the clean run's top token).")
    corrupted_answer: Text | None = Field(None, max_length=64, description="The corrupted run's answer, exactly one "
                                         "token (default: the corrupted run's top token other than the clean answer).")
    grid: Literal["residual", "attention", "ffn", "heads", "all"] = Field(
        "ffn", description="Which activation is patched: the residual stream at each layer's input, the attention "
                           "output, the FFN output (each layer × position), each head's output (layer × head, every "
                           "position), or all four.")
    knockout: Bool = Field(True, description="Also the clean run with each layer's FFN output zeroed (one copy per "
                                             "layer): p(clean answer) layer by layer.")


class AnswerOut(VocabToken):
    given: bool = Field(description="False: the default (the run's top token).")


class GridOut(BaseModel):
    name: str = Field(description="residual, attention, ffn or heads.")
    columns: Literal["position", "head"]
    scores: list[list[float]] = Field(description="[layer][position or head]: 0 = the corrupted run, 1 = the clean "
                                                  "run; values outside 0..1 happen.")
    seconds: float


class KnockoutOut(BaseModel):
    ablation: Literal["zero"] = Field(description="The FFN output is set to zero (not to its mean).")
    clean_prob: float
    probs: list[float] = Field(description="[layer]: p(clean answer) with that layer's FFN output zero everywhere.")


class ActivationPatchingLabOut(BaseModel):
    model: str
    clean_tokens: list[TokenOut]
    corrupted_tokens: list[TokenOut]
    clean_answer: AnswerOut
    corrupted_answer: AnswerOut
    clean_diff: float = Field(description="logit[clean answer] − logit[corrupted answer], clean run, last position.")
    corrupted_diff: float = Field(description="The same on the corrupted run.")
    checks: dict[str, float] = Field(description="nothing patched (0) and the whole residual stream at layer 0's "
                                                 "input patched at every position (1), measured in the same batches.")
    grids: list[GridOut]
    knockout: KnockoutOut | None
    forwards: int = Field(description="Patched copies of the prompt run (each a forward pass, batched).")


def plan(context: Context, request: ActivationPatchingLabRequest) -> Build:
    resolved = context.model
    check_decoder_only(resolved, NEEDS_DECODER, NOT_ENCODER_DECODER)
    if resolved.cfg.per_layer_input is not None:
        raise errors.not_in_model(f"Activation patching on {resolved.name}: {PER_LAYER_INPUTS}.")
    if request.chat:
        raise errors.invalid_option("chat", "activation patching reads the two prompts as plain text, not as chat "
                                            "messages.")
    if request.corrupted == "":
        raise errors.empty_text("corrupted")
    model = resolved.model
    clean = encode_text(resolved.loaded, request.text)
    corrupted = encode_text(resolved.loaded, request.corrupted)
    if len(clean) != len(corrupted):
        raise errors.invalid_option("corrupted", f"the clean prompt is {len(clean)} tokens and the corrupted prompt "
                                                 f"is {len(corrupted)}; patching copies position by position, so "
                                                 "they must have the same number of tokens. Change one word for "
                                                 "another word of as many tokens.").with_details(
            "token_counts_differ", clean=len(clean), corrupted=len(corrupted))
    def answer(field: str, text: str | None, prompt: str) -> int | None:  # the token after the prompt
        return None if text is None else one_token(resolved.loaded, field, text, before=prompt)

    given = (answer("clean_answer", request.clean_answer, request.text),
             answer("corrupted_answer", request.corrupted_answer, request.corrupted))
    grids, positions = grids_of(request.grid), len(clean)
    forwards = patching_forwards(model, grids, positions, request.knockout)
    if forwards * positions > MAX_PATCHED_TOKENS:
        raise errors.too_much_work("grid", forwards, MAX_PATCHED_TOKENS // positions,
                                   f"forward passes of the {positions}-token prompt ({MAX_PATCHED_TOKENS:,} tokens "
                                   "in all at the most: one grid instead of all, no knock-out or a shorter prompt)")

    def build(run: Run) -> dict[str, Any]:
        try:
            done = run_patching(model, [t.id for t in clean], [t.id for t in corrupted], given, grids,
                                request.knockout)
        except SameAnswers as same:
            raise errors.invalid_option("corrupted_answer", "the two answers are the same token, so their logit "
                                                            "difference is always 0: give two different answers.") \
                .with_details("same_token", field="corrupted_answer") from same
        except SameDifference as same:
            raise no_contrast(same.clean_diff, same.corrupted_diff) from same
        knocked = done.knockout
        return {
            "model": resolved.name, "clean_tokens": tokens_out(clean), "corrupted_tokens": tokens_out(corrupted),
            "clean_answer": answer_out(resolved, done.answers[0], given[0]),
            "corrupted_answer": answer_out(resolved, done.answers[1], given[1]),
            "clean_diff": round(done.clean_diff, 6), "corrupted_diff": round(done.corrupted_diff, 6),
            "checks": {"nothing": round(done.nothing, 6), "whole_residual": round(done.whole_residual, 6)},
            "grids": [{"name": g.grid.name, "columns": "head" if g.grid.per_head else "position",
                       "scores": [rounded(row) for row in g.grid.scores], "seconds": round(g.seconds, 3)}
                      for g in done.grids],
            "knockout": None if knocked is None else {"ablation": "zero", "clean_prob": round(knocked.clean_prob, 6),
                                                      "probs": rounded(knocked.probs)},
            "forwards": forwards,
        }

    return build


def answer_out(resolved: Resolved, token: int, given: int | None) -> dict[str, Any]:
    return vocab_token(resolved.loaded, token, given=given is not None)


def no_contrast(clean_diff: float, corrupted_diff: float) -> errors.ApiError:
    return errors.invalid_option("corrupted", f"the two runs give the answers almost the same logit difference "
                                              f"({clean_diff:.4f} and {corrupted_diff:.4f}), so 0 and 1 cannot be "
                                              "told apart: choose prompts or answers the model tells apart.")


EXPERIMENT = Experiment(
    name="activation_patching", method="POST", request=ActivationPatchingLabRequest,
    response=ActivationPatchingLabOut, plan=plan, refuses=("encoder", "encoder-decoder"),
    summary=summary_of(__doc__),
)
