"""Every head's attention at `position` beside the change in the loss and in the chosen next token's
probability when that head alone is ablated (Lab I's intervention).

POST /api/lab/ablation: every head's attention beside what ablating it alone does to the loss and the next token."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from analysis.ablation import MAX_ABLATED_HEADS
from analysis.lens import lm_stack
from app import errors
from app.lab.common import Experiment, refuse_unreproduced, summary_of
from app.pipeline import Build, Context, Run
from app.request_checks import check_generative
from app.schemas import INTEGER, TextInput, TokenOut
from app.tokenizing import token_text, tokens_out
from lab.ablation import ablation_with_check


class AblationLabRequest(TextInput):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"model": "tiny-gpt", "text": "我爱北京天安门广场。"}, {"model": "tiny-gpt", "text": "我爱北京", "position": 2},
    ]})

    position: Annotated[int, Field(ge=0, le=4096), INTEGER] | None = Field(
        None, description="The query position whose attention and next token are followed (default: the last).")


class HeadEffectOut(BaseModel):
    layer: int
    head: int
    weights: list[float]
    max_weight: float
    loss: float | None
    loss_change: float | None
    prob: float
    prob_change: float


class AblationLabOut(BaseModel):
    model: str
    tokens: list[TokenOut]
    position: int
    chosen_id: int
    chosen_text: str
    clean_loss: float | None
    clean_prob: float
    none_ablated: dict[str, float | None] = Field(description="The same edit with no head named: loss and prob change.")
    heads: list[HeadEffectOut]


def plan(context: Context, request: AblationLabRequest) -> Build:
    resolved = context.model
    check_generative(resolved)
    refuse_unreproduced(resolved, "Head ablation")
    heads = len(resolved.model.stack_named(lm_stack(resolved.model)).blocks) * resolved.cfg.n_heads
    if heads > MAX_ABLATED_HEADS:
        raise errors.too_much_work("model", heads, MAX_ABLATED_HEADS, "heads, each ablated in its own forward pass")
    enc_dec = resolved.cfg.architecture == "encoder-decoder"

    def build(run: Run) -> dict[str, Any]:
        inputs = run.inputs
        target = inputs.target_tokens if enc_dec else None
        read = target if target is not None else inputs.tokens
        if request.position is not None and request.position >= len(read):
            raise errors.out_of_range("Position", request.position, len(read))
        checked = ablation_with_check(resolved.model, [t.id for t in inputs.tokens],
                                      [t.id for t in target] if target is not None else None, request.position)
        result = checked.result
        return {
            "model": resolved.name, "tokens": tokens_out(read), "position": result.position,
            "chosen_id": result.chosen_id, "chosen_text": token_text(resolved.loaded, result.chosen_id),
            "clean_loss": result.clean_loss, "clean_prob": result.clean_prob,
            "none_ablated": {"loss_change": checked.none_loss_change, "prob_change": checked.none_prob_change},
            "heads": [{"layer": e.layer, "head": e.head, "weights": [round(w, 6) for w in e.weights],
                       "max_weight": round(max(e.weights), 6), "loss": e.loss, "loss_change": e.loss_change,
                       "prob": e.prob, "prob_change": e.prob_change} for e in result.heads],
        }

    return build


EXPERIMENT = Experiment(
    name="ablation", method="POST", request=AblationLabRequest, response=AblationLabOut,
    plan=plan, refuses=("encoder",),
    summary=summary_of(__doc__),
)
