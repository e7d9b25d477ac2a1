"""What every lab experiment has beyond an endpoint: its route under /api/lab, its panel, what it refuses.

A lab experiment is an `Endpoint` (app/pipeline.py), run by the service as every endpoint is (`Service.run`):
it resolves what the experiment `uses`, answers a repeated request from the body cache, calls
`plan(context, request)` (the checks: too much work or a bad layer costs nothing), then runs the returned build
in the inference pool with a `Run`. Each app/lab/<experiment>.py holds its request and response models, its
checks and its plan, and ends with `EXPERIMENT = Experiment(...)`; the one list is app/lab/__init__.py. The
numbers come from lab/ and analysis/; the modules here check, pick, round and serialize. The checks they share
with the explorer (stack, layer, heads, a model that writes text, the work budget) are app/request_checks.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, get_args

from pydantic import BaseModel, Field

from app import errors
from app.pipeline import Build, Context, Endpoint, RequestT, Run, Uses
from app.resolve import Resolved
from app.schemas import Bool, Int, StackName, TextInput, TokenOut
from lab.reproduced import refusal
from model.config import Architecture as Family


class AttentionLayerInput(TextInput):
    """One attention layer of the text's trace (experiments that read a layer's q, k, v)."""

    layer: Int = Field(0, ge=0, le=1024, description="The layer, from 0 (a 422 names the model's own range).")
    stack: StackName | None = Field(None, description="Encoder-decoder only: 'encoder' (default) or 'decoder'.")
    cross: Bool = Field(False, description="The decoder's cross-attention (encoder-decoder only).")


class AttentionHeadInput(AttentionLayerInput):
    """One head of one attention layer."""

    head: Int = Field(0, ge=0, le=1024, description="The query head, from 0 (a 422 names the model's own range).")


# The lab's work budget in forward passes of the model: what one request may run (steering charges one per prompt
# of its two sets and two per new token, the continuation with and without the vector).
MAX_FORWARDS = 64


def refuse_unreproduced(resolved: Resolved, experiment: str) -> None:
    """A 422 naming what of this model (Gemma 4) an experiment that redoes its math outside the forward pass
    leaves out (lab/reproduced.py); nothing for a model it reproduces."""
    reason = refusal(resolved.cfg, experiment)
    if reason is not None:
        raise errors.not_in_model(f"{resolved.name}: {reason}.")


# The model families (TransformerConfig.architecture); an experiment lists those it refuses.
FAMILIES: tuple[Family, ...] = get_args(Family)


@dataclass(frozen=True)
class Experiment(Endpoint[RequestT]):
    """One lab experiment: one route, one panel, one plan, all under one name.

    `name` is the experiment everywhere: its modules (lab/<name>.py, app/lab/<name>.py,
    static/js/lab/panels/<name>.js, tests/lab/test_<name>.py, tests/app/test_lab_<name>.py), its panel and
    link (/lab?panel=<name>), its URL fields (<name>.<key>), its texts (<name>_title, <name>_lead, ... in
    static/text/lab.<lang>.json) and, in kebab-case, its route (/api/lab/<name-with-dashes>).
    """

    # the model families its plan refuses with a 422 (the page shows `<name>_refused` instead of asking)
    refuses: tuple[Family, ...] = ()
    aliases: tuple[str, ...] = ()  # the panel's older names, still opened by old links (/lab?panel=<alias>)
    # its numbers are exact on a hybrid model (Qwen3.5: gated DeltaNet layers, gated attention output): it runs the
    # model's own forward pass only. Else its plan refuses such a model by name (refuse_hybrid)
    hybrid: bool = False

    def __post_init__(self) -> None:
        if not self.hybrid:
            object.__setattr__(self, "plan", refusing_hybrid(self.name, self.plan))
        # its route is its name in kebab-case under /api/lab (kv_cache -> /api/lab/kv-cache), in the lab's group
        object.__setattr__(self, "route", self.route or "/api/lab/" + self.name.replace("_", "-"))
        object.__setattr__(self, "tag", self.tag or "lab")

    def describe(self) -> dict[str, Any]:  # ExperimentOut
        """Its entry in GET /api/lab/experiments."""
        return {"name": self.name, "path": self.route, "method": self.method, "summary": self.summary,
                "refuses": list(self.refuses), "aliases": list(self.aliases)}


def refusing_hybrid(name: str, plan: Any) -> Any:
    """`plan`, after a 422 for a hybrid model (model.config.TransformerConfig.hybrid): the experiment redoes
    attention's math, or reads attention patterns, in every layer, which a gated DeltaNet layer does not have."""

    def checked(context: Context, request: Any) -> Build:
        cfg = context.resolved.cfg if context.resolved is not None else None
        if cfg is not None and cfg.hybrid:
            deltanet = [i for i in range(cfg.n_layers) if cfg.is_deltanet(i)]
            attention = cfg.attention_layer_numbers
            layers = ", ".join(map(str, deltanet))
            raise errors.not_in_model(
                f"The {name} experiment recomputes attention (its patterns, or its math outside the forward pass) "
                f"layer by layer, as plain softmax attention. This model is a hybrid: its gated DeltaNet layers "
                f"({layers}) keep a state matrix updated token by token, with no attention pattern, and its attention "
                "layers multiply their output by a gate. The experiment does not implement either, so it is refused "
                "rather than answered with numbers that are not the model's."
            ).with_details("deltanet_model", experiment=name, deltanet_layers=deltanet, attention_layers=attention)
        return plan(context, request)

    return checked


class ExperimentOut(BaseModel):
    """One entry of GET /api/lab/experiments."""

    name: str = Field(description="The experiment, its lab panel (/lab?panel=<name>) and its modules.")
    path: str
    method: str
    summary: str
    refuses: list[Family] = Field(description="Model families it answers with a 422 (the panel says why instead).")
    aliases: list[str] = Field(description="Older names of its panel that /lab?panel= still opens.")


def rounded(values: list[float], digits: int = 6) -> list[float]:
    return [round(v, digits) for v in values]


def summary_of(doc: str | None) -> str:
    """An experiment's summary: the first paragraph of its module's docstring (what the route answers, read by
    whoever opens the module and by the API docs alike), line breaks kept."""
    if not doc or not doc.strip():
        raise ValueError("an experiment's module starts with its summary, as a docstring")
    return doc.split("\n\n", 1)[0].strip()


# ---------------------------------------------------------------- what several experiments share

ENCODER_PREDICTS_NOTHING = "This model is an encoder: it reads the whole text at once and predicts no next token."


def check_decoder_only(resolved: Resolved, needs: str, encoder_decoder: str) -> None:
    """A 422 unless the model is a decoder with an LM head: `needs` says why the experiment needs one ("... so it
    needs a decoder-only model (like tiny-gpt or smollm2)."), then why this model is not one (`encoder_decoder`
    for an encoder-decoder)."""
    cfg = resolved.cfg
    if cfg.architecture != "decoder" or not cfg.lm_head:
        why = {"encoder": ENCODER_PREDICTS_NOTHING, "encoder-decoder": encoder_decoder}.get(cfg.architecture, "")
        raise errors.not_in_model(f"{needs} {why}".strip())


class StackTokensOut(BaseModel):
    """The start of an answer about one stack's run of the text: the model, the tokens that stack read, the stack
    (None: the model's only one). An experiment may redeclare `tokens` to say which tokens they are."""

    model: str
    tokens: list[TokenOut]
    stack: str | None


class QueryKeyOut(BaseModel):
    """The start of an answer about one attention layer: its queries' and keys' tokens (the two stacks' for
    cross-attention), the stack and the layer."""

    model: str
    query_tokens: list[TokenOut]
    key_tokens: list[TokenOut]
    stack: str | None
    layer: int


class HeadOut(QueryKeyOut):
    """... and one query head of it: the K/V head it reads (GQA), its width, and whether it is masked causally."""

    head: int
    kv_head: int
    d_head: int
    causal: bool


__all__ = ["FAMILIES", "MAX_FORWARDS", "AttentionHeadInput", "AttentionLayerInput", "Build", "Context", "Experiment",
           "ExperimentOut", "HeadOut", "QueryKeyOut", "Run", "StackTokensOut", "Uses", "check_decoder_only", "rounded",
           "summary_of"]
