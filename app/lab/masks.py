"""Causal, bidirectional, sliding-window (`window`), padding (this sentence and its first `shorter`
tokens in one batch) and encoder-decoder cross masks for the sentence's tokens, and the model's
pattern at `layer` when every layer uses each mask.

POST /api/lab/masks: causal, bidirectional, sliding, padding and cross masks, and the model's pattern under each."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from app import errors
from app.lab.common import Experiment, summary_of
from app.pipeline import Build, Context, Run
from app.request_checks import attention_layer
from app.schemas import INTEGER, Encoding, Int, TensorOut, TextInput, TokenOut
from app.tensors import encode_tensor
from app.tokenizing import tokens_out
from lab.masks import masks_with_patterns


class MasksLabRequest(TextInput):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"model": "tiny-gpt", "text": "我爱北京天安门广场。", "window": 3, "layer": 0},
    ]})

    window: Int = Field(3, ge=1, le=4096, description="Sliding window: a query sees keys fewer than W away.")
    shorter: Annotated[int, Field(ge=1, le=4096), INTEGER] | None = Field(
        None, description="Tokens of the shorter sentence in the padded "
                                                                 "batch (default: half of the sentence).")
    layer: Int = Field(0, ge=0, description="The layer whose pattern is shown under each mask.")
    encoding: Encoding = "list"


class MaskOut(BaseModel):
    mask: list[Any] = Field(description="1: the query may see the key. [q_pos, k_pos], or [row, q_pos, k_pos].")
    pattern: TensorOut | None = Field(None, description="The model's pattern at `layer` under this mask.")


class MasksLabOut(BaseModel):
    model: str
    tokens: list[TokenOut]
    target_tokens: list[TokenOut] | None = None
    layer: int
    stack: str | None
    window: int
    shorter: int
    model_mask: str = Field(description="The mask the model was trained with: causal, bidirectional or sliding.")
    masks: dict[str, MaskOut]


def plan(context: Context, request: MasksLabRequest) -> Build:
    resolved, budget = context.model, context.budget
    cfg = resolved.cfg
    stack = attention_layer(resolved, request.layer, None).stack  # an encoder-decoder's: the encoder
    causal = cfg.architecture == "decoder"  # the stack that reads the sentence

    def build(run: Run) -> dict[str, Any]:
        inputs = run.inputs
        n = len(inputs.tokens)
        shorter = request.shorter if request.shorter is not None else max(1, n // 2)
        if shorter > n:
            raise errors.invalid_option("shorter", f"{shorter} is more than the sentence's {n} tokens.")
        n_target = len(inputs.target_tokens) if inputs.target_tokens is not None else n
        cells = cfg.n_heads * (3 * n * n + 2 * n * n + 2 * n_target * n)  # the patterns, before any is run
        if cells > budget.max_cells:
            raise errors.response_too_large(cells, budget.max_cells)
        target_ids = [t.id for t in inputs.target_tokens] if inputs.target_tokens is not None else None
        found = masks_with_patterns(resolved.model, [t.id for t in inputs.tokens], target_ids, shorter=shorter,
                                    window=request.window, layer=request.layer, stack=stack, causal=causal)
        out: dict[str, Any] = {}
        for name, (mask, pattern) in found.items():
            dims = ("head", "q_pos", "k_pos") if name in ("causal", "bidirectional", "sliding") else (
                "row", "head", "q_pos", "k_pos")
            out[name] = {"mask": mask.int().tolist(),
                         "pattern": None if pattern is None else encode_tensor(name, pattern, dims, request.encoding)}
        answer: dict[str, Any] = {
            "model": resolved.name, "tokens": tokens_out(inputs.tokens), "layer": request.layer, "stack": stack,
            "window": request.window, "shorter": shorter,
            "model_mask": "sliding" if cfg.sliding_window is not None else "causal" if causal else "bidirectional",
            "masks": out,
        }
        if inputs.target_tokens is not None:
            answer["target_tokens"] = tokens_out(inputs.target_tokens)
        return answer

    return build


EXPERIMENT = Experiment(
    name="masks", method="POST", request=MasksLabRequest, response=MasksLabOut,
    plan=plan,
    summary=summary_of(__doc__),
)
