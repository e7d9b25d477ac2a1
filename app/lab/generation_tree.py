"""Greedy generation token by token: each step's 5 most likely tokens, the layer from which each token
stays the logit lens's top-1 (its commitment layer), and the top 3 tokens at one step continued
greedily as a small tree.

POST /api/lab/generation-tree: greedy generation token by token, each token's alternatives and commitment layer
(logit lens), and the top alternatives at one step continued greedily as a small tree (lab/generation_tree.py)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from app import errors
from app.lab.common import Experiment, StackTokensOut, summary_of
from app.pipeline import Build, Context, Run
from app.request_checks import check_generative
from app.schemas import Int, TextInput, TokenOut
from app.tokenizing import tokens_out, written_tokens
from lab.generation_tree import BRANCHES, TOP, forwards_needed, generation_tree

MAX_NEW_TOKENS = 32
MAX_BRANCH_TOKENS = 8
MAX_FORWARDS = 48  # forward passes one request may run (the largest of both fields would be 57)


class GenerationTreeLabRequest(TextInput):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"model": "tiny-gpt", "text": "我爱北京", "max_new_tokens": 12, "branch_step": 0, "branch_tokens": 4},
    ]})

    max_new_tokens: Int = Field(12, ge=1, le=MAX_NEW_TOKENS,
                                description="Greedy steps (fewer when the context is full).")
    branch_step: Int = Field(0, ge=0, le=MAX_NEW_TOKENS - 1,
                             description="The generated step (from 0) whose top 3 tokens the tree continues.")
    branch_tokens: Int = Field(4, ge=1, le=MAX_BRANCH_TOKENS,
                               description="Greedy tokens after each alternative of the tree.")


class Alternative(TokenOut):
    prob: float = Field(description="Its probability at this step (the model's own logits).")


class GeneratedToken(TokenOut):
    step: int
    alternatives: list[Alternative] = Field(description=(
        f"The step's {TOP} most likely tokens, the greedy one first; spans count characters of the generated text "
        "up to and including each, so byte tokens name the character they finish."))
    committed: str | None = Field(description=(
        "The first lens layer ('embed', '0', '1', ...) from which this token is the lens's top-1 at every later "
        "layer; null when it is not top-1 at the last layer."))
    lens_probs: list[float] = Field(description="[layer] the lens's probability of this token after each block.")
    lens_top: list[TokenOut] = Field(description="[layer] the lens's top-1 after each block (spans as alternatives').")


class BranchOut(BaseModel):
    tokens: list[TokenOut] = Field(description="The alternative, then its greedy continuation (spans as `steps`'s).")
    prob: float = Field(description="The alternative's probability at the branch step.")
    greedy: bool = Field(description="The alternative the greedy path took.")


class GenerationTreeLabOut(StackTokensOut):
    tokens: list[TokenOut] = Field(description="The prompt the LM stack read (an encoder-decoder: its decoder input).")
    layers: list[str] = Field(description="The lens's layers: 'embed', then after block 0, 1, ...")
    steps: list[GeneratedToken] = Field(description="The greedy tokens; spans count characters of the generated text.")
    text: str = Field(description="The generated text, decoded.")
    branch_step: int
    branches: list[BranchOut] = Field(description=f"The branch step's top {BRANCHES} tokens, each continued greedily.")
    max_diff_last: float = Field(description="max |last layer's lens logits − the decoding loop's logits|.")
    forwards: int = Field(description="Forward passes run: greedy steps + 1 traced pass + tree rows × steps.")


def plan(context: Context, request: GenerationTreeLabRequest) -> Build:
    resolved = context.model
    check_generative(resolved)
    if request.branch_step >= request.max_new_tokens:
        raise errors.invalid_option("branch_step", f"step {request.branch_step} is not among the "
                                                   f"{request.max_new_tokens} generated steps (0 to "
                                                   f"{request.max_new_tokens - 1}).")
    cost = forwards_needed(request.max_new_tokens, request.branch_tokens)
    if cost > MAX_FORWARDS:
        raise errors.too_much_work("max_new_tokens", cost, MAX_FORWARDS,
                                   f"forward passes (max_new_tokens + 1 + {BRANCHES} × branch_tokens)")
    loaded = resolved.loaded

    def build(run: Run) -> dict[str, Any]:
        inputs = run.inputs
        target = inputs.target_tokens  # an encoder-decoder's decoder input (None: a decoder, one stack)
        read = target or inputs.tokens
        room = resolved.cfg.n_ctx - len(read)
        if request.branch_step >= min(request.max_new_tokens, room):
            raise errors.invalid_option("branch_step", f"the prompt leaves room for {max(room, 0)} new tokens in "
                                                       f"the model's context of {resolved.cfg.n_ctx}: pick an "
                                                       "earlier step or a shorter text.")
        tree = generation_tree(resolved.model, [t.id for t in inputs.tokens],
                               None if target is None else [t.id for t in target],
                               max_new_tokens=request.max_new_tokens, branch_step=request.branch_step,
                               branch_tokens=request.branch_tokens)
        generated = [s.id for s in tree.steps]
        strip = written_tokens(loaded, generated)
        steps = []
        for i, (step, token) in enumerate(zip(tree.steps, strip, strict=True)):
            alternatives = [{**written_tokens(loaded, generated[:i] + [alt])[-1], "prob": prob}
                            for alt, prob in zip(step.top_ids, step.top_probs, strict=True)]
            steps.append({**token, "step": i, "alternatives": alternatives,
                          "committed": None if step.committed is None else tree.layers[step.committed],
                          "lens_probs": step.lens_probs,
                          "lens_top": [written_tokens(loaded, generated[:i] + [top])[-1] for top in step.lens_top]})
        before = generated[:tree.branch_step]
        branches = [{"tokens": written_tokens(loaded, before + b.ids)[len(before):], "prob": b.prob,
                     "greedy": b.ids[0] == generated[tree.branch_step]} for b in tree.branches]
        return {
            "model": resolved.name, "tokens": tokens_out(read), "stack": None if target is None else "decoder",
            "layers": tree.layers, "steps": steps, "text": loaded.tokenizer.decode(generated),
            "branch_step": tree.branch_step, "branches": branches, "max_diff_last": tree.max_diff_last,
            "forwards": tree.forwards,
        }

    return build


EXPERIMENT = Experiment(
    name="generation_tree", method="POST", request=GenerationTreeLabRequest, response=GenerationTreeLabOut,
    plan=plan, refuses=("encoder",), hybrid=True,
    summary=summary_of(__doc__),
)
