"""Parameters per component (equal to the state dict's sum); one head of width d_model against h heads
of width d_model/h; MHA, GQA and MQA K/V counts; the FFN's share.

POST /api/lab/parameters: where a model's parameters are, per component, per head split, per K/V sharing."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from app.lab.common import Experiment, summary_of
from app.pipeline import Build, Context, Run
from app.schemas import ModelChoice
from lab import parameters


class ParametersLabRequest(ModelChoice):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"model": "tiny-gpt"}, {"config": {"d_model": 512, "n_heads": 8, "n_layers": 6}},
    ]})


class ParametersLabOut(BaseModel):
    model: str
    config: dict[str, Any]
    counts: dict[str, int]
    state_dict_total: int
    ffn_share: float
    ffn_share_of_blocks: float
    head_splits: list[dict[str, int]] = Field(description="One attention layer of this d_model as MHA, per head count.")
    kv_sharing: list[dict[str, Any]]
    own_attention: dict[str, Any] = Field(description=(
        "The model's own first self-attention layer, counted from its weights (its real K/V heads: GQA where GQA)."))


def plan(context: Context, _: ParametersLabRequest) -> Build:
    resolved = context.model

    def build(_: Run) -> dict[str, Any]:
        report = parameters.parameter_report(resolved.model)
        return {"model": resolved.name, "config": resolved.cfg.to_dict(), **report,
                "head_splits": parameters.head_splits(resolved.cfg), "kv_sharing": parameters.kv_sharing(resolved.cfg),
                "own_attention": parameters.own_attention(resolved.model)}

    return build


EXPERIMENT = Experiment(
    name="parameters", method="POST", request=ParametersLabRequest, response=ParametersLabOut,
    plan=plan, uses="model",
    summary=summary_of(__doc__),
)
