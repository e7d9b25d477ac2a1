"""One head's attention weights a_ij beside what each key actually adds to each position,
‖a_ij · v_j W_O^h‖ (Kobayashi et al. 2020): the keys each ranks first, their rank correlation,
‖v_j W_O^h‖ per key, and the check that Σ_h Σ_j a_ij v_j W_O^h (+ b_O) is the layer's attention output.

POST /api/lab/attention-flow: one head's attention weights beside what it moves, ‖a_ij · v_j W_O^h‖."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from app import errors
from app.lab.common import Experiment, StackTokensOut, refuse_unreproduced, rounded, summary_of
from app.pipeline import Build, Context, Run
from app.request_checks import attention_layer
from app.schemas import Int, StackName, TextInput, TokenOut
from app.tokenizing import tokens_out
from lab.attention_flow import attention_flow


class AttentionFlowLabRequest(TextInput):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"model": "tiny-gpt", "text": "我爱北京天安门广场。", "layer": 0, "head": 0},
    ]})

    layer: Int = Field(0, ge=0, le=1024)
    head: Int = Field(0, ge=0, le=1024)
    stack: StackName | None = Field(None, description="Encoder-decoder only: 'encoder' (default) or 'decoder'.")


class FlowRowOut(BaseModel):
    top_weight: int = Field(description="The key with the largest weight (−1: the row reads no key).")
    top_flow: int = Field(description="The key with the largest ‖a_ij · v_j W_O^h‖.")
    rank_correlation: float | None = Field(description="Spearman's ρ of the row's weights and contributions "
                                                       "over the keys it may read (None: fewer than 2, or ties).")


class IdentityOut(BaseModel):
    max_abs_diff: float = Field(description="max |Σ_h Σ_j a_ij v_j W_O^h (+ b_O) − the traced attention output|.")
    max_abs_output: float = Field(description="max |traced attention output|, for scale.")
    out_bias: bool = Field(description="Whether the output projection has a bias (added once per position).")


class AttentionFlowLabOut(StackTokensOut):
    tokens: list[TokenOut] = Field(description="The stack's tokens: queries and keys (self-attention).")
    layer: int
    head: int
    kv_head: int = Field(description="The K/V head whose v this query head reads (GQA).")
    n_heads: int
    weights: list[list[float | None]] = Field(description="[q_pos][k_pos] a_ij (None: hidden by the mask).")
    flow_norms: list[list[float | None]] = Field(description="[q_pos][k_pos] ‖a_ij · v_j W_O^h‖.")
    flow_shares: list[list[float | None]] = Field(description="flow_norms / their row's sum: each row sums to 1.")
    value_norms: list[float] = Field(description="[k_pos] ‖v_j W_O^h‖.")
    key_mean_weight: list[float] = Field(description="[k_pos] mean weight on each key over the queries that read it.")
    key_mean_share: list[float] = Field(description="[k_pos] mean of flow_shares on each key over the same queries.")
    rows: list[FlowRowOut]
    rows_differ: int = Field(description="Rows whose largest weight and largest contribution are different keys.")
    rows_read: int = Field(description="Rows that read at least one key.")
    mean_rank_correlation: float | None = Field(description="Mean of the rows' rank correlations.")
    identity: IdentityOut


def plan(context: Context, request: AttentionFlowLabRequest) -> Build:
    resolved = context.model
    cfg = resolved.cfg
    refuse_unreproduced(resolved, "Attention flow")
    stack = attention_layer(resolved, request.layer, request.stack, heads=[request.head]).stack

    def build(run: Run) -> dict[str, Any]:
        forward = run.trace()
        read = forward.target_tokens if stack == "decoder" else forward.tokens
        n = len(read or [])
        if 3 * n * n > context.budget.max_cells:
            raise errors.response_too_large(3 * n * n, context.budget.max_cells)
        flow = attention_flow(resolved.model, forward.trace, layer=request.layer, head=request.head, stack=stack)
        visible = flow.visible.cpu().tolist()

        def shown(matrix: list[list[float]]) -> list[list[float | None]]:
            return [[round(x, 6) if seen else None for x, seen in zip(row, mask, strict=True)]
                    for row, mask in zip(matrix, visible, strict=True)]

        correlations = flow.rank_correlations
        mean = flow.mean_rank_correlation
        return {
            "model": resolved.name, "tokens": tokens_out(read), "stack": stack, "layer": request.layer,
            "head": request.head, "kv_head": flow.kv_head, "n_heads": cfg.n_heads,
            "weights": shown(flow.weights.cpu().tolist()), "flow_norms": shown(flow.flow_norms.cpu().tolist()),
            "flow_shares": shown(flow.flow_shares.cpu().tolist()), "value_norms": rounded(flow.value_norms.tolist()),
            "key_mean_weight": rounded(flow.key_mean_weight.tolist()),
            "key_mean_share": rounded(flow.key_mean_share.tolist()),
            "rows": [{"top_weight": w, "top_flow": f, "rank_correlation": None if r is None else round(r, 6)}
                     for w, f, r in zip(flow.top_weight, flow.top_flow, correlations, strict=True)],
            "rows_differ": flow.rows_differ, "rows_read": sum(w >= 0 for w in flow.top_weight),
            "mean_rank_correlation": None if mean is None else round(mean, 6),
            "identity": {"max_abs_diff": flow.identity_error, "max_abs_output": flow.output_scale,
                         "out_bias": flow.has_out_bias},
        }

    return build


EXPERIMENT = Experiment(
    name="attention_flow", method="POST", request=AttentionFlowLabRequest,
    response=AttentionFlowLabOut, plan=plan, aliases=("flow",),
    summary=summary_of(__doc__),
)
