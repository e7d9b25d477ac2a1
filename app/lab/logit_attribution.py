"""Direct logit attribution: the logit of one next token (or its difference with a second token) at
one position, split into the embedding, every head (z W_O^h), every FFN and the biases, with the
final norm's scale frozen from the real run; the largest heads split by source token.

POST /api/lab/logit-attribution: one next-token logit split into what each head, FFN and bias wrote."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from app import errors
from app.lab.common import Experiment, refuse_unreproduced, rounded, summary_of
from app.pipeline import Build, Context, Run
from app.request_checks import check_generative
from app.schemas import INTEGER, Int, Text, TextInput, TokenOut, VocabToken
from app.tokenizing import one_token, tokens_out, vocab_token
from lab.logit_attribution import NotAdditive, check_additive, logit_attribution


class LogitAttributionLabRequest(TextInput):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"model": "tiny-gpt", "text": "The cat sat on the"},
        {"model": "smollm2", "text": "The capital of France is", "target": " Paris", "versus": " London"},
    ]})

    position: Annotated[int, Field(ge=0, le=4096), INTEGER] | None = Field(
        None, description="The position whose next-token logit is split (default: the last).")
    target: Text | None = Field(None, max_length=64, description=(
        "The token whose logit is split, as text that is exactly one token for this model (mind the leading "
        "space: ' Paris'); default: the model's top next token."))
    versus: Text | None = Field(None, max_length=64, description=(
        "A second token, as text: the parts are then those of logit(target) − logit(versus)."))
    top: Int = Field(3, ge=1, le=8, description="How many heads (largest |part| first) to split by source token.")


class SourceSplitOut(BaseModel):
    layer: int
    head: int
    contribution: float = Field(description="The head's part of the logit.")
    sources: list[float] = Field(description="[k_pos] a_pj · (v_j W_O^h) · u: what the head carried from each token.")
    identity_error: float = Field(description="|Σ sources − contribution|.")


class LogitAttributionLabOut(BaseModel):
    model: str
    tokens: list[TokenOut]
    position: int
    target: VocabToken
    versus: VocabToken | None
    logit: float = Field(description="The model's own logit of target (minus versus's), from the run.")
    total: float = Field(description="The sum of every part below.")
    max_abs_diff: float = Field(description="|total − logit|: the parts add up to the logit.")
    heads: list[list[float]] = Field(description="[layer][head] z_{p,h} W_O^h · u.")
    ffn: list[float] = Field(description="[layer] (FFN output − its output bias) · u.")
    attn_bias: list[float] | None = Field(description="[layer] b_O · u (None: no attention output bias).")
    ffn_bias: list[float] | None = Field(description="[layer] the FFN's output bias · u (None: no FFN bias).")
    embedding: dict[str, float] = Field(description="'token', 'position', 'segments' (or 'embeddings' after a norm).")
    final_norm_bias: float | None = Field(description="β · W_U[t] of a final LayerNorm (None: RMSNorm or no norm).")
    layers: list[float] = Field(description="[layer] everything block L wrote: heads + FFN + biases.")
    running: list[float] = Field(description="[layer + 1] the sum so far: after the embeddings (and β), then after "
                                             "each block; the last is `total`.")
    norm: str | None = Field(description="The final norm ('layernorm', 'rmsnorm'; None: none).")
    norm_scale: float | None = Field(description="σ of the final norm at `position` in the real run, held fixed.")
    top_heads: list[SourceSplitOut]


def plan(context: Context, request: LogitAttributionLabRequest) -> Build:
    resolved = context.model
    cfg = resolved.cfg
    refuse_unreproduced(resolved, "Logit attribution")
    check_generative(resolved)
    try:
        check_additive(resolved.model)
    except NotAdditive as error:  # no sum of parts: an encoder-decoder's decoder, a Post-LN model
        raise errors.not_in_model(f"{resolved.name} cannot be split: {error}.") from error
    # the token after the last position follows the sentence: "Paris" there is refused for " Paris"
    before = request.text if request.position is None and not request.chat else None
    target_id = None if request.target is None else one_token(resolved.loaded, "target", request.target, before=before)
    versus_id = None if request.versus is None else one_token(resolved.loaded, "versus", request.versus, before=before)

    def build(run: Run) -> dict[str, Any]:
        n = len(run.inputs.tokens)
        position = n - 1 if request.position is None else request.position
        if position >= n:
            raise errors.out_of_range("Position", position, n)
        cells = cfg.n_layers * (cfg.n_heads + 3) + request.top * n
        if cells > context.budget.max_cells:
            raise errors.response_too_large(cells, context.budget.max_cells)
        forward = run.trace()  # the one forward pass (shared with the explorer's trace cache)
        target = int(forward.output[0, position].argmax()) if target_id is None else target_id
        if versus_id == target:
            raise errors.invalid_option("versus", "it is the same token as the target: the difference would be 0 "
                                                  "everywhere. Pick another token.").with_details(
                "same_token", field="versus")
        split = logit_attribution(resolved.model, forward.trace, forward.output, position=position, target=target,
                                  versus=versus_id, top=request.top)

        def choice(token: int | None) -> dict[str, Any] | None:
            return None if token is None else vocab_token(resolved.loaded, token)

        return {
            "model": resolved.name, "tokens": tokens_out(forward.tokens), "position": position,
            "target": choice(target), "versus": choice(versus_id), "logit": round(split.logit, 6),
            "total": round(split.total, 6), "max_abs_diff": abs(split.total - split.logit),
            "heads": [rounded(row) for row in split.heads.tolist()], "ffn": rounded(split.ffn.tolist()),
            "attn_bias": None if split.attn_bias is None else rounded(split.attn_bias.tolist()),
            "ffn_bias": None if split.ffn_bias is None else rounded(split.ffn_bias.tolist()),
            "embedding": {k: round(v, 6) for k, v in split.embedding.items()},
            "final_norm_bias": None if split.final_norm_bias is None else round(split.final_norm_bias, 6),
            "layers": rounded(split.layers.tolist()), "running": rounded(split.running.tolist()),
            "norm": split.norm, "norm_scale": None if split.norm_scale is None else round(split.norm_scale, 6),
            "top_heads": [{"layer": s.layer, "head": s.head, "contribution": round(s.contribution, 6),
                           "sources": rounded(s.sources), "identity_error": s.identity_error} for s in split.top],
        }

    return build


EXPERIMENT = Experiment(
    name="logit_attribution", method="POST", request=LogitAttributionLabRequest,
    response=LogitAttributionLabOut, plan=plan, refuses=("encoder", "encoder-decoder"), aliases=("dla",),
    summary=summary_of(__doc__),
)
