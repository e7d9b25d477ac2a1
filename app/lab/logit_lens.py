"""The top-k next tokens after every block at every position, through the final norm and the
unembedding; the last layer's reading equals the model's logits.

POST /api/lab/logit-lens: what each block would predict, through the final norm and the unembedding."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from app.lab.common import Experiment, summary_of
from app.pipeline import Build, Context, Run
from app.request_checks import check_generative
from app.schemas import Int, TextInput, TokenOut
from app.tokenizing import token_text, tokens_out
from lab.logit_lens import lens_with_check


class LogitLensLabRequest(TextInput):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"model": "tiny-gpt", "text": "我爱北京天安门广场。", "k": 5},
    ]})

    k: Int = Field(5, ge=1, le=20, description="Most likely next tokens shown after each block.")


class LensCell(BaseModel):
    ids: list[int]
    texts: list[str]
    probs: list[float]


class LogitLensLabOut(BaseModel):
    model: str
    tokens: list[TokenOut] = Field(description="What the LM stack read (an encoder-decoder: its decoder input).")
    layers: list[str] = Field(description="'embed', then after block 0, 1, ...")
    top: list[list[LensCell]] = Field(description="[layer][position]: the k most likely next tokens.")
    next_token_probs: list[list[float]] | None = Field(description="[layer][position]: of the token that follows.")
    max_diff_last: float = Field(description="max |last layer's lens logits − the model's logits|.")


def plan(context: Context, request: LogitLensLabRequest) -> Build:
    resolved = context.model
    check_generative(resolved)

    def build(run: Run) -> dict[str, Any]:
        forward = run.trace()
        read = forward.target_tokens if resolved.cfg.architecture == "encoder-decoder" else forward.tokens
        lens, max_diff_last = lens_with_check(resolved.model, forward.trace, forward.output, k=request.k,
                                              ids=[t.id for t in read or []])
        top_ids, top_probs = lens.top_ids.cpu().tolist(), lens.top_probs.cpu().tolist()
        top = [[{"ids": cell_ids, "texts": [token_text(resolved.loaded, i) for i in cell_ids], "probs": cell_probs}
                for cell_ids, cell_probs in zip(layer_ids, layer_probs, strict=True)]
               for layer_ids, layer_probs in zip(top_ids, top_probs, strict=True)]
        following = lens.next_token_probs
        return {
            "model": resolved.name, "tokens": tokens_out(read), "layers": lens.layers, "top": top,
            "next_token_probs": following.cpu().tolist() if following is not None else None,
            "max_diff_last": max_diff_last,
        }

    return build


EXPERIMENT = Experiment(
    name="logit_lens", method="POST", request=LogitLensLabRequest, response=LogitLensLabOut,
    plan=plan, refuses=("encoder",), aliases=("lens",), hybrid=True,
    summary=summary_of(__doc__),
)
