"""One head's softmax attention beside linear attention with φ(x) = elu(x) + 1 on the same trained q, k, v
(no retraining): both weight matrices, per-row entropy and largest weight, cosine and relative error
of the outputs, the recurrent and quadratic forms' agreement, and the fixed state against the KV cache.

POST /api/lab/linear-attention: one head's softmax attention beside linear attention (φ = elu + 1) on the same
trained q, k, v (lab/linear_attention.py): both weight matrices, per-row entropy and max, the outputs' agreement,
and the state against the KV cache; beside it, a real gated DeltaNet head (Qwen3.5's linear attention, trained) on the
same text: its state matrix, how much each token changed it, and the attention layer's KV cache."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from app import errors
from app.lab.common import AttentionHeadInput, Experiment, HeadOut, refuse_unreproduced, rounded, summary_of
from app.pipeline import Build, Context, Run
from app.request_checks import attention_layer
from app.resolve import Resolved
from app.schemas import Encoding, TensorOut, TokenOut
from app.schemas.fields import Int
from app.tensors import encode_tensor
from app.tokenizing import tokens_out
from lab.deltanet_head import NotDeltaNet, check_head, deltanet_head, shipped_hybrid, text_tokens
from lab.linear_attention import linear_attention_for_head


class LinearAttentionLabRequest(AttentionHeadInput):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"model": "tiny-gpt", "text": "我爱北京天安门广场。", "layer": 1, "head": 0},
    ]})

    encoding: Encoding = Field("list", description="'base64': the two outputs at full precision.")
    dn_layer: Int = Field(0, ge=0, le=1024,
                          description="The real DeltaNet head's layer: the hybrid's, else tiny-deltanet's.")
    dn_head: Int = Field(0, ge=0, le=1024, description="The real DeltaNet head: a value head of that layer.")


class MemoryOut(BaseModel):
    d_k: int
    d_v: int
    n: int = Field(description="Keys in this text.")
    state_numbers: int = Field(description="Linear attention's state per K/V head: d_k·d_v + d_k, at any length.")
    kv_cache_numbers: int = Field(description="Softmax attention's KV cache per K/V head at n keys: n·(d_k + d_v).")
    crossover_length: int = Field(description="The smallest n with n·(d_k + d_v) > d_k·d_v + d_k (from the formulas).")
    lengths: list[int] = Field(description="n from 0 past this text and twice the crossover.")
    kv_cache_curve: list[int] = Field(description="The KV cache's numbers at each of `lengths`.")


class DeltaNetHeadOut(BaseModel):
    model: str = Field(description="The hybrid it runs: the model asked when it is one, else tiny-deltanet.")
    tokens: list[TokenOut] = Field(description="The text as that model reads it (its start token first).")
    layer: int
    head: int = Field(description="A value head of that DeltaNet layer.")
    key_head: int = Field(description="The key head it reads (value heads share key heads in groups).")
    d_key: int
    d_value: int
    state: list[list[float]] = Field(description="[d_value, d_key] S after the last token.")
    change: list[float] = Field(description="Per token: ‖S_t − S_(t−1)‖ / max(‖S_t‖, ‖S_(t−1)‖), 1 at the first.")
    kept: list[float] = Field(description="Per token: exp(g_t), the share of S kept before the token writes.")
    beta: list[float] = Field(description="Per token: β_t, how strongly the token writes.")
    read_norm: list[float] = Field(description="Per token: ‖o_t‖, the size of what the head reads out, S_t q_t.")
    state_numbers: int = Field(description="One head's state: d_value · d_key, at any length.")
    layer_state_numbers: int = Field(description="The DeltaNet layer's state: every value head's S.")
    half_tokens: int = Field(description="The text cut at half its tokens, run on its own.")
    half_state_shape: list[int] = Field(description="S's shape after that half: the same as after the whole text.")
    attention_layer: int | None = Field(description="The model's first full-attention layer.")
    kv_per_token: int = Field(description="That layer's K and V numbers per token: 2 · K/V heads · d_head.")
    kv_numbers: int = Field(description="That layer's KV cache for this text.")
    crossover: int | None = Field(description="From this many tokens on, that cache outgrows the layer's state.")


class LinearAttentionLabOut(HeadOut):
    pos_encoding: str = Field(description="'rope': q and k are after the rotation, what the model dots.")
    rotated: bool = Field(description="q and k were rotated by RoPE before the dot product.")
    alibi_slope: float | None = Field(description="The softmax adds −slope·distance; the linear form cannot.")
    window: int | None = Field(description="The softmax sees this many keys at most; the linear form sees all.")
    scale: float = Field(description="The model's factor on q·k in this layer (1/√d_head unless it says otherwise).")
    softmax_weights: list[list[float]] = Field(description="[q_pos, k_pos] softmax(q·kᵀ·scale + mask).")
    linear_weights: list[list[float]] = Field(description="[q_pos, k_pos] φ(q_i)·φ(k_j) / Σ_j φ(q_i)·φ(k_j).")
    softmax_entropy: list[float] = Field(description="Per query row, nats.")
    linear_entropy: list[float] = Field(description="Per query row, nats.")
    softmax_max: list[float]
    linear_max: list[float]
    cosine: list[float] = Field(description="Per query: cos(softmax output, linear output).")
    relative_error: list[float] = Field(description="Per query: ‖linear − softmax‖ / ‖softmax‖.")
    softmax_output: TensorOut = Field(description="softmax weights · v [q_pos, d_head]: the model's head output.")
    linear_output: TensorOut = Field(description="The recurrent form [q_pos, d_head].")
    max_diff_z: float = Field(description="max |softmax output − the model's hook_z|.")
    max_diff_pattern: float = Field(description="max |softmax weights − the model's hook_pattern|.")
    max_diff_forms: float = Field(description="max |recurrent − quadratic| linear output.")
    memory: MemoryOut
    deltanet: DeltaNetHeadOut = Field(description="A real gated DeltaNet head on the same text, beside the toy.")


def real_deltanet(resolved: Resolved, text: str, layer: int, head: int) -> Callable[[Run], dict[str, Any]]:
    """A real DeltaNet head on the text (lab/deltanet_head.py): the model on screen's when it is a hybrid (its own
    tokens), else the shipped tiny-deltanet's (the text read with its tokenizer). Checked now (422 for a layer or
    head the model does not have, or a text past tiny-deltanet's context); computed when the build calls it."""
    own = resolved.cfg.hybrid
    loaded = resolved.loaded if own else shipped_hybrid()
    name = resolved.name if own else str(loaded.meta.get("name"))
    tokens = None if own else text_tokens(loaded, text)
    if tokens is not None and len(tokens) > loaded.model.cfg.n_ctx:
        raise errors.too_many_tokens("text", len(tokens), loaded.model.cfg.n_ctx)
    try:
        check_head(loaded.model, layer, head)
    except NotDeltaNet as error:
        raise errors.not_in_model(f"The real DeltaNet head ({name}): {error}.") from error

    def measured(run: Run) -> dict[str, Any]:
        read = tokens if tokens is not None else list(run.trace().tokens or [])
        real = deltanet_head(loaded.model, [t.id for t in read], layer, head)
        return {
            "model": name, "tokens": tokens_out(read), "layer": real.layer,
            "head": real.head, "key_head": real.key_head, "d_key": real.d_key, "d_value": real.d_value,
            "state": [rounded(row) for row in real.state.tolist()], "change": rounded(real.change.tolist()),
            "kept": rounded(real.kept.tolist()), "beta": rounded(real.beta.tolist()),
            "read_norm": rounded(real.read.norm(dim=-1).tolist()), "state_numbers": real.state_numbers,
            "layer_state_numbers": real.layer_state_numbers, "half_tokens": real.half_tokens,
            "half_state_shape": list(real.half_state_shape), "attention_layer": real.attention_layer,
            "kv_per_token": real.kv_per_token, "kv_numbers": real.kv_numbers, "crossover": real.crossover,
        }

    return measured


def plan(context: Context, request: LinearAttentionLabRequest) -> Build:
    resolved = context.model
    cfg = resolved.cfg
    refuse_unreproduced(resolved, "The linear-attention comparison")
    stack = attention_layer(resolved, request.layer, request.stack, request.cross, [request.head]).stack
    real = real_deltanet(resolved, request.text, request.dn_layer, request.dn_head)

    def build(run: Run) -> dict[str, Any]:
        forward = run.trace()
        queries = forward.target_tokens if stack == "decoder" else forward.tokens
        keys = forward.tokens if request.cross else queries
        n_q, n_k = len(queries or []), len(keys or [])
        cells = 2 * n_q * n_k + 6 * n_q + 2 * n_q * cfg.d_head
        if cells > context.budget.max_cells:
            raise errors.response_too_large(cells, context.budget.max_cells)
        r = linear_attention_for_head(resolved.model, forward.trace, request.layer, request.head, stack=stack,
                                      cross=request.cross)
        head, mem = r.head, r.memory
        lengths = mem.lengths()
        dims = ("q_pos", "d_head")
        return {
            "model": resolved.name, "query_tokens": tokens_out(queries), "key_tokens": tokens_out(keys),
            "stack": stack, "layer": request.layer, "head": request.head,
            "kv_head": request.head // (cfg.n_heads // cfg.kv_heads), "d_head": mem.d_k, "causal": head.causal,
            "pos_encoding": cfg.pos_encoding, "rotated": cfg.positional.where == "q_k" and not request.cross,
            "alibi_slope": head.alibi_slope, "window": head.window, "scale": head.scale,
            "softmax_weights": [rounded(row) for row in r.softmax_weights.cpu().tolist()],
            "linear_weights": [rounded(row) for row in r.linear_weights.cpu().tolist()],
            "softmax_entropy": rounded(r.softmax_entropy.cpu().tolist()),
            "linear_entropy": rounded(r.linear_entropy.cpu().tolist()),
            "softmax_max": rounded(r.softmax_max.cpu().tolist()), "linear_max": rounded(r.linear_max.cpu().tolist()),
            "cosine": rounded(r.cosine.cpu().tolist()), "relative_error": rounded(r.relative_error.cpu().tolist()),
            "softmax_output": encode_tensor("softmax output", r.softmax_output.cpu(), dims, request.encoding),
            "linear_output": encode_tensor("linear output", r.linear_output.float().cpu(), dims, request.encoding),
            "max_diff_z": r.max_diff_z, "max_diff_pattern": r.max_diff_pattern, "max_diff_forms": r.max_diff_forms,
            "memory": {"d_k": mem.d_k, "d_v": mem.d_v, "n": mem.n, "state_numbers": mem.state,
                       "kv_cache_numbers": mem.kv_cache, "crossover_length": mem.crossover,
                       "lengths": list(lengths), "kv_cache_curve": mem.kv_cache_at(lengths)},
            "deltanet": real(run),
        }

    return build


EXPERIMENT = Experiment(
    name="linear_attention", method="POST", request=LinearAttentionLabRequest,
    response=LinearAttentionLabOut, plan=plan, aliases=("linear",), hybrid=True,
    summary=summary_of(__doc__),
)
