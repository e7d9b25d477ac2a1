"""One attention layer on a batch of two sentences, reshape by reshape, with one cell followed through.

    x                       [batch, pos, d_model]
    W_Q x                   [batch, pos, head·d_head]
    .view                   [batch, pos, head, d_head]        same numbers at (b, p, h·d_head + i) -> (b, p, h, i)
    (RoPE rotates q, k)     [batch, pos, head, d_head]        new numbers, same shape
    .transpose(1, 2)        [batch, head, pos, d_head]        (b, p, h, i) -> (b, h, p, i)
    K: the same with kv_head; GQA repeats each K/V head for its group of query heads
    Q·Kᵀ                    [batch, head, q_pos, k_pos]
    softmax (mask, pads)    [batch, head, q_pos, k_pos]
    weights · V             [batch, head, q_pos, d_head]
    .transpose(1, 2)        [batch, pos, head, d_head]
    .reshape                [batch, pos, head·d_head]
    W_O                     [batch, pos, d_model]

The steps are those of the fused path (Attention.forward with fused=True); the traced path computes the same with
einsum, and every step is checked against the model's own recorded stage (q, scores, z, attention output).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lab.norm_statistics import PaddedBatch
from model.hooks import attention_layer, stage_name
from model.transformer import Transformer


@dataclass(frozen=True)
class Cell:
    """Where the followed numbers sit: sentence (batch row), position, query head, and the first `width` of d_head."""

    sentence: int
    pos: int
    head: int
    key: int  # the key position whose score and weight are followed
    width: int = 4


@dataclass(frozen=True)
class Step:
    name: str  # the step's text key: x, q_flat, q_view, q_rot, q_t, k_t, k_group, scores, pattern, z_t, z, z_flat, out
    dims: tuple[str, ...]
    shape: tuple[int, ...]
    index: tuple[int | None, ...]  # where the numbers are read; None: the slice of the followed width
    values: list[float]
    reshape: bool  # a view, transpose or reshape: the numbers read must equal the step before's


@dataclass(frozen=True)
class Walk:
    steps: list[Step]
    model_diffs: dict[str, float]  # max |this step − the model's own stage| for q, scores, pattern, z, attention output
    pad_key_weight: float  # the largest weight any real query puts on a pad position (0: pads are masked out)
    pattern: torch.Tensor  # [batch, head, q_pos, k_pos] the model's weights (for the chart)


def attention_input_stage(model: Transformer, layer: int) -> str:
    """What block `layer`'s attention reads: ln1's output (Pre-Norm) or the residual stream itself (Post-Norm)."""
    return stage_name("ln1.normalized" if model.cfg.norm_placement == "pre" else "resid_pre", layer)


def walk(model: Transformer, batch: PaddedBatch, layer: int, cell: Cell) -> Walk:
    """Run the batch, then redo `layer`'s attention step by step from its input, reading the cell at each step."""
    cfg = model.cfg
    attn = model.attention(attention_layer(cfg, layer))
    rotated = attn.rotary is not None
    names = {"x": attention_input_stage(model, layer), "q_view": stage_name("q", layer),
             "q": stage_name("rot_q" if rotated else "q", layer),
             "k": stage_name("rot_k" if rotated else "k", layer), "v": stage_name("v", layer),
             "scores": stage_name("scores_raw", layer), "pattern": stage_name("pattern", layer),
             "z": stage_name("z", layer), "out": stage_name("attn_out", layer)}
    _, trace = model.run_with_trace(batch.tokens, list(names.values()), padding_mask=batch.real)
    n_batch, n_pos = batch.tokens.shape
    h, d, group = cfg.n_heads, cfg.d_head, cfg.n_heads // cfg.kv_heads
    b, p, head, i, k = cell.sentence, cell.pos, cell.head, slice(0, min(cell.width, d)), cell.key
    lanes = range(i.stop)

    with torch.inference_mode():
        x = trace[names["x"]]  # [batch, pos, d_model]
        q_flat = attn.W_Q(x)  # [batch, pos, head·d_head]
        q_view = q_flat.view(n_batch, n_pos, h, d)  # [batch, pos, head, d_head]
        q = trace[names["q"]]  # after RoPE where the model rotates: [batch, pos, head, d_head]
        q_t = q.transpose(1, 2)  # [batch, head, pos, d_head]
        k_t = trace[names["k"]].transpose(1, 2)  # [batch, kv_head, pos, d_head]
        # [batch, head, pos, d_head]: query head h reads K/V head h // group
        k_group = k_t.repeat_interleave(group, dim=1)
        scores = q_t @ k_group.transpose(-1, -2)  # [batch, head, q_pos, k_pos]
        pattern = trace[names["pattern"]]  # the model's scale, mask (causal, pads) and softmax
        v_group = trace[names["v"]].transpose(1, 2).repeat_interleave(group, dim=1)  # [batch, head, pos, d_head]
        z_t = pattern @ v_group  # [batch, head, q_pos, d_head]
        z = z_t.transpose(1, 2)  # [batch, pos, head, d_head]
        z_flat = z.reshape(n_batch, n_pos, h * d)  # [batch, pos, head·d_head]
        out = attn.W_O(z_flat)  # [batch, pos, d_model]

    def read(t: torch.Tensor, *where: int | slice) -> list[float]:
        return [float(v) for v in t[where].reshape(-1)]

    flat = slice(head * d, head * d + i.stop)
    steps = [
        Step("x", ("batch", "pos", "d_model"), tuple(x.shape), (b, p, None), read(x, b, p, i), False),
        Step("q_flat", ("batch", "pos", "head·d_head"), tuple(q_flat.shape), (b, p, head * d), read(q_flat, b, p, flat),
             False),
        Step("q_view", ("batch", "pos", "head", "d_head"), tuple(q_view.shape), (b, p, head, None),
             read(q_view, b, p, head, i), True),
    ]
    if rotated:
        steps.append(Step("q_rot", ("batch", "pos", "head", "d_head"), tuple(q.shape), (b, p, head, None),
                          read(q, b, p, head, i), False))
    steps += [
        Step("q_t", ("batch", "head", "pos", "d_head"), tuple(q_t.shape), (b, head, p, None), read(q_t, b, head, p, i),
             True),
        Step("k_t", ("batch", "kv_head", "pos", "d_head"), tuple(k_t.shape), (b, head // group, k, None),
             read(k_t, b, head // group, k, i), False),
        Step("k_group", ("batch", "head", "pos", "d_head"), tuple(k_group.shape), (b, head, k, None),
             read(k_group, b, head, k, i), True),
        Step("scores", ("batch", "head", "q_pos", "k_pos"), tuple(scores.shape), (b, head, p, k),
             read(scores, b, head, p, k), False),
        Step("pattern", ("batch", "head", "q_pos", "k_pos"), tuple(pattern.shape), (b, head, p, k),
             read(pattern, b, head, p, k), False),
        Step("z_t", ("batch", "head", "pos", "d_head"), tuple(z_t.shape), (b, head, p, None), read(z_t, b, head, p, i),
             False),
        Step("z", ("batch", "pos", "head", "d_head"), tuple(z.shape), (b, p, head, None), read(z, b, p, head, i), True),
        Step("z_flat", ("batch", "pos", "head·d_head"), tuple(z_flat.shape), (b, p, head * d),
             read(z_flat, b, p, flat), True),
        Step("out", ("batch", "pos", "d_model"), tuple(out.shape), (b, p, None), read(out, b, p, slice(0, len(lanes))),
             False),
    ]
    real = batch.real  # [batch, pos]: what is compared and read; pad rows are computed but unused
    pairs = (real[:, None, :, None] & real[:, None, None, :]).expand_as(scores)  # [batch, head, q_pos, k_pos]
    diffs = {
        "q": float((q_view - trace[names["q_view"]])[real].abs().max()),
        "scores": float((scores - trace[names["scores"]])[pairs].abs().max()),
        "z": float((z - trace[names["z"]])[real].abs().max()),
        "out": float((out - trace[names["out"]])[real].abs().max()),
    }
    on_pads = pattern.masked_fill(real[:, None, None, :], 0.0)  # [batch, head, q_pos, k_pos]: weights on pad keys only
    pad_key_weight = float(on_pads[real[:, None, :, None].expand_as(on_pads)].max())
    return Walk(steps, diffs, pad_key_weight, pattern)
