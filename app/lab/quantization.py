"""What a quantized file's precision does: the float32 run (this project's) against the activations
rounded to 8-bit blocks of 32 before every quantized linear layer (an emulation of llama.cpp's
activation quantization) and against the weights re-quantized to Q8_0 / Q4_1 / Q4_0: next-token KL
per position, top-1 agreement, the top next tokens, the weights' relative error per layer.

POST /api/lab/quantization: the float32 run against llama.cpp's 8-bit activation rounding (emulated) and against
the weights re-quantized to a coarser type: KL per position, top-1 agreement, the top next tokens, the weight
error per layer (lab/quantization.py)."""

from __future__ import annotations

from typing import Any, Literal

import torch
from pydantic import BaseModel, ConfigDict, Field

from app import errors
from app.lab.common import MAX_FORWARDS, Experiment, refuse_unreproduced, rounded, summary_of
from app.pipeline import Build, Context, Run
from app.request_checks import check_generative
from app.schemas import Bool, Int, TextInput, TokenOut, VocabToken
from app.tokenizing import tokens_out, vocab_token
from lab.quantization import (
    Comparison,
    NotEmulated,
    check_emulated,
    forwards_needed,
    model_plan,
    quantization,
)
from model.device import one_row

Requant = Literal["none", "Q8_0", "Q4_1", "Q4_0"]


class QuantizationLabRequest(TextInput):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"model": "smollm2", "text": "The capital of France is"},
        {"model": "smollm2", "text": "The capital of France is", "activations": True, "requantize": "Q4_0"},
    ]})

    activations: Bool = Field(True, description=(
        "Also run with the activations rounded to 8-bit blocks of 32 before every linear layer whose weight is "
        "quantized in the file (an emulation of llama.cpp's rounding, not its kernels)."))
    requantize: Requant = Field("none", description=(
        "Also run with every weight matrix re-quantized to this type (quantize, then dequantize, of the float32 "
        "weights): what a smaller file would do. 'none': no such run."))
    top: Int = Field(5, ge=1, le=10, description="How many of the float32 run's most likely next tokens to list.")


class TokenProbability(VocabToken):
    float32: float = Field(description="Its probability in the float32 run, at the last position.")
    other: float = Field(description="Its probability in this run.")


class RunOut(BaseModel):
    kind: Literal["activations", "requantized"]
    type: str | None = Field(description="The type the weights were re-quantized to (None: activation rounding).")
    kl: list[float] = Field(description="[pos] KL(float32 run ‖ this run) of the next-token distributions, in nats.")
    agree: list[bool] = Field(description="[pos] the same most likely next token as the float32 run.")
    mean_kl: float
    max_kl: float
    agreement: float = Field(description="The share of positions whose most likely next token is the same.")
    top: list[TokenProbability] = Field(description="The float32 run's top next tokens, with both probabilities.")
    top1: TokenProbability = Field(description="This run's own most likely next token at the last position.")


class WeightErrorOut(BaseModel):
    type: str
    attention: list[float] = Field(description="[layer] ‖W' − W‖ / ‖W‖ of W_Q, W_K, W_V and W_O together.")
    ffn: list[float] = Field(description="[layer] the same of the FFN's matrices together.")
    unembedding: float
    embedding: float | None = Field(description="The token embeddings' (None: tied to the unembedding).")


class QuantizationLabOut(BaseModel):
    model: str
    tokens: list[TokenOut]
    forwards: int = Field(description="Forward passes run: the float32 one and one per other run.")
    from_file: bool = Field(description="Which inputs are rounded was read from the GGUF file's tensor types "
                                        "(false: not a GGUF model; every linear layer treated as quantized).")
    file_types: dict[str, int] = Field(description="The GGUF file's tensor types and how many tensors of each.")
    rounded_inputs: int = Field(description="Linear-layer inputs the emulation rounds (each feeds one group).")
    linear_inputs: int = Field(description="Linear-layer inputs in all: 4 per block and the unembedding's.")
    runs: list[RunOut]
    weight_error: WeightErrorOut | None


def plan(context: Context, request: QuantizationLabRequest) -> Build:
    resolved = context.model
    check_generative(resolved)
    refuse_unreproduced(resolved, "The quantization emulation")
    try:
        check_emulated(resolved.model)
    except NotEmulated as error:
        raise errors.not_in_model(f"{resolved.name} cannot be compared this way: {error}.") from error
    requant = None if request.requantize == "none" else request.requantize
    if not request.activations and requant is None:
        raise errors.invalid_option("activations", "with the activations not rounded and no re-quantized weights "
                                                   "there is nothing to compare with the float32 run: turn one on.")
    forwards = forwards_needed(request.activations, requant)
    if forwards > MAX_FORWARDS:
        raise errors.too_much_work("requantize", forwards, MAX_FORWARDS, "forward passes (the float32 run + one "
                                                                       "per comparison)")
    loaded = resolved.loaded

    def build(run: Run) -> dict[str, Any]:
        tokens = run.inputs.tokens
        try:
            where = model_plan(resolved.model, loaded.meta)
        except NotEmulated as error:
            raise errors.not_in_model(f"{resolved.name} cannot be compared this way: {error}.") from error
        ids = one_row([t.id for t in tokens], resolved.model.device)  # [batch, pos]
        out = quantization(resolved.model, ids, where, activations=request.activations, requant=requant)
        best = out.reference.topk(min(request.top, out.reference.numel())).indices.tolist()

        def token(i: int, other: torch.Tensor) -> dict[str, Any]:
            return vocab_token(loaded, i, float32=round(float(out.reference[i]), 6), other=round(float(other[i]), 6))

        def compared(kind: str, kind_type: str | None, c: Comparison) -> dict[str, Any]:
            return {"kind": kind, "type": kind_type, "kl": rounded(c.kl, 8), "agree": c.agree,
                    "mean_kl": round(c.mean_kl, 8), "max_kl": round(max(c.kl), 8), "agreement": c.agreement,
                    "top": [token(i, c.probabilities) for i in best],
                    "top1": token(int(c.probabilities.argmax()), c.probabilities)}

        runs = []
        if out.activations is not None:
            runs.append(compared("activations", None, out.activations))
        if out.requant is not None:
            runs.append(compared("requantized", requant, out.requant))
        errs = out.weight_errors
        return {
            "model": resolved.name, "tokens": tokens_out(tokens), "forwards": out.forwards,
            "from_file": where.from_file, "file_types": where.types, "rounded_inputs": where.rounded_inputs,
            "linear_inputs": 4 * resolved.cfg.n_layers + 1, "runs": runs,
            "weight_error": None if errs is None or requant is None else {
                "type": requant, "attention": rounded(errs.attention), "ffn": rounded(errs.ffn),
                "unembedding": round(errs.unembedding, 6),
                "embedding": None if errs.embedding is None else round(errs.embedding, 6)},
        }

    return build


EXPERIMENT = Experiment(
    name="quantization", method="POST", request=QuantizationLabRequest, response=QuantizationLabOut,
    plan=plan, refuses=("encoder", "encoder-decoder"),
    summary=summary_of(__doc__),
)
