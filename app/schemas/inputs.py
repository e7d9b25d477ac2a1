"""What every request about a model carries: the model (a name, a snapshot or an inline config), the text, and
the interventions that change one thing in its forward pass."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.schemas.fields import INTEGER, LIMITS, NUMBER, Bool, Int, Text
from app.schemas.positional import PosKind
from model.config import TransformerConfig


class InlineConfig(BaseModel):
    """A from-scratch model with random (seeded) weights and a byte-level tokenizer (vocabulary 256)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"architecture": "decoder", "d_model": 64, "n_layers": 2, "n_heads": 1, "pos_encoding": "rope", "seed": 0}
    ]})

    architecture: Literal["decoder", "encoder", "encoder-decoder"] = "decoder"
    d_model: Int = Field(64, ge=2, le=LIMITS["d_model"])
    n_layers: Int = Field(2, ge=1, le=LIMITS["n_layers"])
    n_decoder_layers: Annotated[int, Field(ge=1, le=LIMITS["n_layers"]), INTEGER] | None = Field(None)
    n_heads: Int = Field(4, ge=1, le=LIMITS["n_heads"])
    n_kv_heads: Annotated[int, Field(ge=1, le=LIMITS["n_heads"]), INTEGER] | None = Field(None)
    d_mlp: Annotated[int, Field(ge=1, le=LIMITS["d_mlp"]), INTEGER] | None = Field(None)
    pos_encoding: PosKind = "sinusoidal"
    norm: Literal["layernorm", "rmsnorm"] = "layernorm"
    norm_placement: Literal["pre", "post"] = "pre"
    activation: Literal["relu", "gelu", "gelu_tanh", "swiglu"] = "gelu"
    bias: Bool = True
    sliding_window: Annotated[int, Field(ge=1, le=4096), INTEGER] | None = Field(None)
    seed: Int = Field(0, ge=0, le=2**31 - 1)

    def to_config(self, n_ctx: int) -> TransformerConfig:
        """Raises model.config.ConfigError for combinations that cannot work (e.g. 64 % 3 heads)."""
        vocab = 257 if self.architecture == "encoder-decoder" else 256  # bytes (+ the start token)
        return TransformerConfig(vocab_size=vocab, n_ctx=n_ctx, **self.model_dump())


class InterventionsIn(BaseModel):
    """Change one thing in this forward pass and see why (self-attention of every layer unless named)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"no_scale": True}, {"no_mask": True}, {"ablate_heads": [[1, 0]]}, {"shuffle": [0, 2, 1, 3]},
    ]})

    no_scale: Bool = Field(False, description="softmax(Q·Kᵀ) without ÷√d_head: watch the softmax saturate.")
    no_mask: Bool = Field(False, description="No mask: a decoder may see the future.")
    window: Annotated[int, Field(ge=1, le=4096), INTEGER] | None = Field(
        None, description="Each query sees only keys fewer than W away.")
    temperature: Annotated[float, Field(ge=0.01, le=100), NUMBER] | None = Field(
        None, description="softmax(scores / T) in every pattern.")
    ablate_heads: list[Annotated[list[Int], Field(min_length=2, max_length=2)]] | None = Field(
        None, max_length=256, description="[[layer, head], ...] whose output is zeroed.")
    ablate_stack: Literal["encoder", "decoder"] | None = Field(
        None, description="Encoder-decoder only: ablate in this stack alone (default: every stack with that layer).")
    shuffle: list[Int] | None = Field(
        None, max_length=512, description="Run the tokens in this order: a permutation of 0..n-1 over the "
                                          "tokens /api/tokenize lists (the source tokens for encoder-decoders).")


class NoInput(BaseModel):
    """The request of an endpoint that takes none (a list of what the server offers): a query it is sent is
    ignored, as it always was."""


class ModelName(BaseModel):
    """A registered model by its name alone (GET /api/models/{name}'s path)."""

    model_config = ConfigDict(extra="forbid")

    name: str

    @property
    def model(self) -> str:  # the field the service resolves a model by (app.pipeline.NamesModel)
        return self.name


class ModelChoice(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(None, max_length=64, description="A name from GET /api/models (default: the default).")
    config: InlineConfig | None = Field(None, description="Instead of `model`: a from-scratch model, random weights.")
    snapshot: Annotated[int, Field(ge=0, le=10**9), INTEGER] | None = Field(
        None,
        description="A training step listed under `meta.snapshots` of the model: its weights at that step "
                    "(watch attention change as the model learns). Omitted: the final weights.")


class TextInput(ModelChoice):
    text: Text = Field(description="Any Unicode text (the source, for encoder-decoder models).")  # "": empty_text
    target_text: str | None = Field(
        None, description="Encoder-decoder only: the decoder input so far (omitted: just the start token). "
                          "Ignored by other models.")
    chat: Bool = Field(False, description="The text as one user message in the model's chat template (meta "
                       "`chat_template`), special tokens as tokens; 422 invalid_option for a model without one.")


class Intervenable(TextInput):
    interventions: InterventionsIn | None = Field(None, description="Change one thing in the forward pass.")
