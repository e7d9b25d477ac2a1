"""One attention layer on a batch of two sentences (`text`, `other`, right-padded), reshape by reshape:
[batch, pos, d_model] → W_Q → [batch, pos, head·d_head] → view → [batch, pos, head, d_head] → transpose
→ [batch, head, pos, d_head] → scores [batch, head, q_pos, k_pos] → weights · V → transpose → reshape →
W_O → [batch, pos, d_model], with K/V heads repeated for GQA; the same numbers of one cell read at
every step, and every step checked against the model's own stages.

POST /api/lab/batch-shapes: one attention layer on a batch of two sentences, view and transpose step by step."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from app import errors
from app.lab.common import Experiment, refuse_unreproduced, rounded, summary_of
from app.lab.norm_statistics import MAX_CHARS, check_plain_batch, sentence_ids
from app.pipeline import Build, Context, Run
from app.request_checks import attention_layer
from app.schemas import INTEGER, Int, Text, TextInput, TokenOut
from app.tokenizing import encode_text, tokens_out
from lab import batch_shapes
from lab.norm_statistics import padded_batch

FOLLOWED = 4  # numbers of d_head followed through the steps


class BatchShapesLabRequest(TextInput):
    """Sentence 1 is `text`, sentence 2 `other`; the cell followed is (sentence, pos, head) and its score with `key`."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"model": "tiny-gpt", "text": "The cat sat on the mat.", "other": "Dogs bark.", "layer": 1, "head": 2},
    ]})

    other: Text = Field("Dogs bark at night.", max_length=MAX_CHARS, description="Sentence 2 of the batch.")
    layer: Int = Field(0, ge=0, le=1024, description="The attention layer walked through.")
    head: Int = Field(0, ge=0, le=1024, description="The query head whose numbers are followed.")
    sentence: Int = Field(1, ge=1, le=2, description="The sentence (batch row + 1) whose numbers are followed.")
    # the bounds on the integer, before its validator: on the optional field pydantic wrote them as "ge"/"le",
    # which no schema reader knows, so a client was not told that -1 is refused
    pos: Annotated[int, Field(ge=0, le=1024), INTEGER] | None = Field(
        None, description="Its position followed (omitted: its last token).")
    key: Int = Field(0, ge=0, le=1024, description="The key position whose score and weight are followed.")


class StepOut(BaseModel):
    name: str = Field(description="x, q_flat, q_view, q_rot (RoPE only), q_t, k_t, k_group, scores, pattern, z_t, z, "
                                  "z_flat, out.")
    dims: list[str]
    shape: list[int]
    index: list[int | None] = Field(description="Where the numbers are read; None: the followed slice 0 … width − 1 "
                                                "(in a head·d_head dimension the index is where the head starts).")
    values: list[float] = Field(description="The numbers read there (full float32 precision).")
    reshape: bool = Field(description="A view, transpose, repeat or reshape: the same numbers as the step before.")


class BatchShapesLabOut(BaseModel):
    model: str
    layer: int
    head: int
    kv_head: int
    n_heads: int
    kv_heads: int
    d_model: int
    d_head: int
    width: int = Field(description="The padded length: positions per sentence.")
    sentences: list[list[TokenOut]] = Field(description="Each sentence's own tokens (then pad positions to `width`).")
    sentence: int
    pos: int
    key: int
    followed: int = Field(description="How many numbers of d_head are followed.")
    steps: list[StepOut]
    model_diffs: dict[str, float] = Field(description="max |a step − the model's own stage| over the real tokens: "
                                                      "q (the view), scores, z, out (the attention output).")
    pad_key_weight: float = Field(description="The largest weight any real query puts on a pad position.")
    pattern: list[list[float]] = Field(description="[q_pos][k_pos] the followed sentence's weights in this head, "
                                                   "pad positions included.")


def plan(context: Context, request: BatchShapesLabRequest) -> Build:
    resolved = context.model
    cfg = resolved.cfg
    refuse_unreproduced(resolved, "The batch-shapes walk")
    check_plain_batch(resolved, request.chat)
    attention_layer(resolved, request.layer, None, heads=[request.head])  # a 422 names the model's range
    other = sentence_ids(resolved, request.other, "other")

    def build(run: Run) -> dict[str, Any]:
        first_tokens = run.inputs.tokens
        rows = [[t.id for t in first_tokens], other]
        row = request.sentence - 1
        n = len(rows[row])
        pos = n - 1 if request.pos is None else request.pos
        for field, value in (("pos", pos), ("key", request.key)):
            if value >= n:
                raise errors.invalid_option(field, f"sentence {request.sentence} has {n} tokens (positions 0 to "
                                                   f"{n - 1}); the rest of the batch row is padding.")
        batch = padded_batch(rows, resolved.model.device)
        cell = batch_shapes.Cell(row, pos, request.head, request.key, FOLLOWED)
        walked = batch_shapes.walk(resolved.model, batch, request.layer, cell)
        pattern = walked.pattern[row, request.head]  # [q_pos, k_pos]
        context.budget.check([pattern])
        return {
            "model": resolved.name, "layer": request.layer, "head": request.head,
            "kv_head": request.head // (cfg.n_heads // cfg.kv_heads), "n_heads": cfg.n_heads, "kv_heads": cfg.kv_heads,
            "d_model": cfg.d_model, "d_head": cfg.d_head, "width": batch.tokens.shape[1],
            "sentences": [tokens_out(first_tokens), tokens_out(encode_text(resolved.loaded, request.other))],
            "sentence": request.sentence, "pos": pos, "key": request.key, "followed": min(FOLLOWED, cfg.d_head),
            "steps": [{"name": s.name, "dims": list(s.dims), "shape": list(s.shape), "index": list(s.index),
                       "values": s.values, "reshape": s.reshape} for s in walked.steps],
            "model_diffs": walked.model_diffs, "pad_key_weight": walked.pad_key_weight,
            "pattern": [rounded(r) for r in pattern.tolist()],
        }

    return build


EXPERIMENT = Experiment(
    name="batch_shapes", method="POST", request=BatchShapesLabRequest, response=BatchShapesLabOut,
    plan=plan, refuses=("encoder-decoder",),
    summary=summary_of(__doc__),
)
