"""FlashAttention from scratch (Dao et al. 2022): exact attention without the q_pos × k_pos matrix.

Queries are cut into tiles of block_q rows, keys and values into tiles of block_k. For one
query tile, the key tiles stream past while three running states are kept per query row:

    m    the largest score seen so far                      [block_q]
    l    Σ exp(score - m) over the keys seen so far         [block_q]
    acc  Σ exp(score - m) · v over the keys seen so far     [block_q, d_head]

A new tile with scores S (block_q × block_k) updates them by the online softmax:

    m'   = max(m, rowmax(S))
    P    = exp(S - m')
    l'   = exp(m - m') · l + rowsum(P)
    acc' = exp(m - m') · acc + P · V_tile

exp(m - m') rescales what was summed against the old maximum to the new one, so after the last
tile acc / l = softmax(S_full) · V exactly. Nothing larger than one block_q × block_k tile of
scores is ever held. Leading dimensions (e.g. [head, ...]) are carried along unchanged.

Memory traffic (numbers moved between main memory, HBM, and the chip's fast memory) is what the
paper counts (its Theorem 2). Standard attention writes the N × N scores S and weights P out and
reads them back: Θ(Nd + N²). The tiled loop reads each query tile once and every key/value tile
once per query tile, and writes only the output and m + log l: N·d reads of Q, (N/block_q)·2N·d of
K and V, N·d + N written; with block_q ≈ M/(4d) for a fast memory of M numbers this is Θ(N²d²/M).
`flash_attention` counts what its loop actually reads and writes; `standard_traffic` and
`flash_traffic` are the formulas.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import torch

from model.hooks import AttentionLayer, attention_layer
from model.layers import soft_cap
from model.positional import BiasKind
from model.transformer import Transformer

# ---------------------------------------------------------------- the algorithm


@dataclass(frozen=True)
class TileState:
    """The running states of one query tile right after it has read one key tile."""

    q_block: int
    k_block: int
    q_range: tuple[int, int]  # query rows [start, stop)
    k_range: tuple[int, int]  # key columns [start, stop)
    m: torch.Tensor  # [..., block_q] running max
    l: torch.Tensor  # noqa: E741 (the paper's name) [..., block_q] running sum of exp(score - m)
    acc: torch.Tensor  # [..., block_q, d_head] running Σ exp(score - m) · v (divide by l for the output so far)


@dataclass
class FlashResult:
    output: torch.Tensor  # [..., q_pos, d_head] = softmax(mask(q·kᵀ · scale + bias)) · v
    logsumexp: torch.Tensor  # [..., q_pos] = m + log l: all the backward pass would keep
    tiles: list[TileState] = field(default_factory=list)  # in the order they were computed (if recorded)
    computed_tiles: int = 0
    skipped_tiles: int = 0  # tiles wholly hidden by the causal mask or the window: never computed
    largest_bytes: int = 0  # the largest intermediate tensor ever held
    n_squared_bytes: int = 0  # what the materialised q_pos × k_pos score matrix would take
    numbers_read: int = 0  # from main memory: every tile of q, k, v the loop loads
    numbers_written: int = 0  # to main memory: the output and logsumexp rows


@dataclass(frozen=True)
class Traffic:
    """Numbers moved between main memory (HBM) and the fast on-chip memory by one attention call."""

    read: int
    written: int

    @property
    def total(self) -> int:
        return self.read + self.written


def standard_traffic(n_q: int, n_k: int, d_head: int) -> Traffic:
    """The textbook kernel sequence (the paper's Algorithm 0), per head: S = QKᵀ written out, read back for
    P = softmax(S), P written out, read back for O = PV. Reads Q, K, S, P, V; writes S, P, O: Θ(Nd + N²)."""
    return Traffic(read=n_q * d_head + n_k * d_head + 2 * n_q * n_k + n_k * d_head,
                   written=2 * n_q * n_k + n_q * d_head)


def flash_traffic(n_q: int, n_k: int, d_head: int, block_q: int) -> Traffic:
    """The tiled loop with no tile skipped (no mask), per head: Q read once, K and V once per query tile,
    O and logsumexp (m + log l) written once. For N = n_q = n_k and block_q ≈ M/(4d): Θ(N²d²/M)."""
    q_tiles = math.ceil(n_q / block_q)
    return Traffic(read=n_q * d_head + q_tiles * 2 * n_k * d_head, written=n_q * d_head + n_q)


TRAFFIC_LENGTHS = (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)  # N of the traffic curves, after the text's


@dataclass(frozen=True)
class TrafficCurves:
    """Bytes moved to and from main memory at each sequence length N (queries = keys), per head."""

    lengths: list[int]  # this text's query count, then the TRAFFIC_LENGTHS above it
    standard: list[int]
    flash: list[int]  # query blocks of block_q
    flash_large_block: list[int]  # query blocks of large_block_q (what a GPU's fast memory holds)


def traffic_curves(n_q: int, d_head: int, block_q: int, large_block_q: int, bytes_per_number: int) -> TrafficCurves:
    """Standard and tiled attention's traffic from the formulas, starting at this text's length so that the
    loop's own count sits on the chart beside them."""
    lengths = [n_q, *(n for n in TRAFFIC_LENGTHS if n > n_q)]
    return TrafficCurves(
        lengths,
        [standard_traffic(n, n, d_head).total * bytes_per_number for n in lengths],
        [flash_traffic(n, n, d_head, block_q).total * bytes_per_number for n in lengths],
        [flash_traffic(n, n, d_head, large_block_q).total * bytes_per_number for n in lengths],
    )


def memory_crossover(block_q: int, block_k: int, d_head: int) -> int:
    """The shortest sequence (n queries × n keys) whose n × n score matrix outgrows the tiled run's largest tensor.

    A tile holds block_q × block_k scores (and their exponentials) and a block_q × d_head partial output;
    none of that grows with n, while the matrix is n². So tiling saves memory from the smallest n with
    n² > max(block_q · block_k, block_q · d_head) on; below it the fixed tile is the larger one.
    """
    held = max(block_q * block_k, block_q * d_head)
    return math.isqrt(held) + 1


def visible(q_pos: torch.Tensor, k_pos: torch.Tensor, causal: bool, window: int | None) -> torch.Tensor:
    """Which keys each query may see, as in the model: bool [q, k] for the given absolute positions."""
    q, k = q_pos[:, None], k_pos[None, :]
    allowed = torch.ones(len(q_pos), len(k_pos), dtype=torch.bool, device=q_pos.device)
    if causal:
        allowed &= k <= q
    if window is not None:
        allowed &= (q - k).abs() < window
    return allowed


def alibi_tile(slope: torch.Tensor, q_pos: torch.Tensor, k_pos: torch.Tensor, causal: bool) -> torch.Tensor:
    """-slope · distance for one tile only (never the full matrix).  slope: [...] -> [..., q, k]."""
    distance = q_pos[:, None] - k_pos[None, :]
    distance = (distance if causal else distance.abs()).clamp(min=0).to(slope.dtype)  # [q, k]
    return -slope[..., None, None] * distance


def flash_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    block_q: int = 16,
    block_k: int = 16,
    causal: bool = False,
    scale: float | None = None,
    alibi_slope: torch.Tensor | float | None = None,
    window: int | None = None,
    softcap: float | None = None,
    record: bool = True,
) -> FlashResult:
    """Attention of q [..., q_pos, d_head] over k, v [..., k_pos, d_head], one tile at a time.

    scale defaults to 1/sqrt(d_head); alibi_slope adds -slope·distance (per leading index if a
    tensor); softcap (Gemma 2) turns each score s into cap·tanh(s / cap) before the mask, score by score, so a
    tile does it as the full matrix would; causal and window hide keys as the model's mask does. record=False keeps
    no tile states (for timing). A query row that sees no key at all gets a zero output, as in the model.
    """
    if block_q < 1 or block_k < 1:
        raise ValueError("block_q and block_k must be at least 1")
    *lead, q_len, d_head = q.shape
    k_len = k.shape[-2]
    scale = 1.0 / math.sqrt(d_head) if scale is None else scale
    slope = None if alibi_slope is None else torch.as_tensor(alibi_slope, dtype=q.dtype, device=q.device)
    element = q.element_size()
    result = FlashResult(
        output=q.new_zeros(q.shape), logsumexp=q.new_full((*lead, q_len), float("-inf")),
        n_squared_bytes=math.prod(lead) * q_len * k_len * element,
    )
    q_starts, k_starts = range(0, q_len, block_q), range(0, k_len, block_k)
    for qi, q0 in enumerate(q_starts):
        q1 = min(q0 + block_q, q_len)
        q_pos = torch.arange(q0, q1, device=q.device)
        q_tile = q[..., q0:q1, :]  # [..., block_q, d_head]
        result.numbers_read += q_tile.numel()
        m = q.new_full((*lead, q1 - q0), float("-inf"))  # [..., block_q]
        l = q.new_zeros((*lead, q1 - q0))  # noqa: E741 (the paper's name) [..., block_q]
        acc = q.new_zeros((*lead, q1 - q0, d_head))  # [..., block_q, d_head]
        for ki, k0 in enumerate(k_starts):
            k1 = min(k0 + block_k, k_len)
            if (causal and k0 > q1 - 1) or (window is not None and q0 - (k1 - 1) >= window):
                result.skipped_tiles += 1  # every key here is in the future / outside the window
                continue
            k_pos = torch.arange(k0, k1, device=q.device)
            k_tile, v_tile = k[..., k0:k1, :], v[..., k0:k1, :]  # [..., block_k, d_head]: loaded once per query tile
            result.numbers_read += k_tile.numel() + v_tile.numel()
            scores = torch.einsum("...qd,...kd->...qk", q_tile, k_tile) * scale  # [..., block_q, block_k]
            if slope is not None:
                scores = scores + alibi_tile(slope, q_pos, k_pos, causal)
            if softcap is not None:
                scores = soft_cap(scores, softcap)
            if causal or window is not None:
                scores = scores.masked_fill(~visible(q_pos, k_pos, causal, window), float("-inf"))
            m_new = torch.maximum(m, scores.amax(dim=-1))  # [..., block_q]
            # a row that has seen no visible key yet keeps m = -inf; subtract 0 there instead (no nan)
            m_safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
            p = torch.exp(scores - m_safe[..., None])  # [..., block_q, block_k], 0 where hidden
            rescale = torch.exp(m - m_safe)  # [..., block_q]: old max -> new max (0 while m was -inf)
            l = rescale * l + p.sum(dim=-1)  # noqa: E741
            acc = rescale[..., None] * acc + torch.einsum("...qk,...kd->...qd", p, v_tile)
            m = m_new
            result.computed_tiles += 1
            held = max(scores.numel(), p.numel(), acc.numel()) * element
            result.largest_bytes = max(result.largest_bytes, held)
            if record:
                result.tiles.append(TileState(qi, ki, (q0, q1), (k0, k1), m, l, acc))
        seen = l > 0
        result.output[..., q0:q1, :] = torch.where(seen[..., None], acc / l.clamp(min=1e-30)[..., None], 0.0)
        result.logsumexp[..., q0:q1] = torch.where(seen, m + l.clamp(min=1e-30).log(), float("-inf"))
        result.numbers_written += result.output[..., q0:q1, :].numel() + result.logsumexp[..., q0:q1].numel()
    return result


def naive_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool = False,
    scale: float | None = None,
    alibi_slope: torch.Tensor | float | None = None,
    window: int | None = None,
    softcap: float | None = None,
) -> torch.Tensor:
    """The textbook version, materialising the full [..., q_pos, k_pos] matrix.  -> [..., q_pos, d_head]"""
    q_len, k_len, d_head = q.shape[-2], k.shape[-2], q.shape[-1]
    scale = 1.0 / math.sqrt(d_head) if scale is None else scale
    scores = torch.einsum("...qd,...kd->...qk", q, k) * scale  # [..., q_pos, k_pos]
    q_pos, k_pos = torch.arange(q_len, device=q.device), torch.arange(k_len, device=q.device)
    if alibi_slope is not None:
        scores = scores + alibi_tile(torch.as_tensor(alibi_slope, dtype=q.dtype, device=q.device), q_pos, k_pos, causal)
    if softcap is not None:
        scores = soft_cap(scores, softcap)
    seen = visible(q_pos, k_pos, causal, window) if causal or window is not None else None  # [q_pos, k_pos]
    if seen is not None:
        scores = scores.masked_fill(~seen, float("-inf"))
    pattern = torch.softmax(scores, dim=-1)  # [..., q_pos, k_pos]
    if seen is not None:  # only a query that sees no key attends nowhere; any other NaN stays NaN
        pattern = pattern.masked_fill(~seen.any(-1, keepdim=True), 0.0)
    return torch.einsum("...qk,...kd->...qd", pattern, v)


# ---------------------------------------------------------------- one head of a real model


@dataclass(frozen=True)
class HeadInputs:
    """Exactly what one head's attention reads in a traced forward pass (batch row 0)."""

    q: torch.Tensor  # [q_pos, d_head], after RoPE when the model rotates
    k: torch.Tensor  # [k_pos, d_head], this head's K/V head (GQA)
    v: torch.Tensor  # [k_pos, d_head]
    scale: float
    causal: bool
    window: int | None
    alibi_slope: float | None
    softcap: float | None  # scores -> cap·tanh(scores / cap) after the scale, before the mask (Gemma 2)
    z: torch.Tensor  # [q_pos, d_head]: the model's own hook_z for this head


def head_stage_names(model: Transformer, layer: int, *, stack: str | None = None, cross: bool = False) -> list[str]:
    """The trace stages `head_inputs` reads (ask run_with_trace for just these); model.hooks.NotInModel (a
    ValueError) for a layer the model does not have."""
    return read_by_head(model, attention_layer(model.cfg, layer, stack, cross))


def read_by_head(model: Transformer, where: AttentionLayer) -> list[str]:
    """q and k (after RoPE where the model rotates), v and z of one attention layer."""
    # a rotary kind: q and k as the scores see them (a NoPE layer, SmolLM3, turns neither)
    rotated = model.cfg.positional.where == "q_k" and not where.cross and model.cfg.has_positions(where.layer)
    return [where.stage(name) for name in (("rot_q", "rot_k") if rotated else ("q", "k")) + ("v", "z")]


def head_inputs(
    model: Transformer, trace: Mapping[str, torch.Tensor], layer: int, head: int,
    *, stack: str | None = None, cross: bool = False,
) -> HeadInputs:
    """One head's q, k, v (rotated by RoPE where the model rotates), scale, mask and ALiBi slope.

    The trace must come from a plain run (no interventions, no padding): that is the attention
    the model's hook_z holds.
    """
    cfg = model.cfg
    if not 0 <= head < cfg.n_heads:
        raise ValueError(f"head must be in 0..{cfg.n_heads - 1}, got {head}")
    where = attention_layer(cfg, layer, stack, cross)
    q_name, k_name, v_name, z_name = read_by_head(model, where)
    kv_head = head // (cfg.n_heads // cfg.kv_heads)
    causal = not cross and model.stack_named(where.stack).causal
    kind = cfg.positional
    slope = float(kind.slopes(cfg.n_heads)[head]) if isinstance(kind, BiasKind) and not cross else None
    return HeadInputs(
        q=trace[q_name][0, :, head].float(),  # [pos, head, d_head] -> [q_pos, d_head]
        k=trace[k_name][0, :, kv_head].float(),  # [pos, kv_head, d_head] -> [k_pos, d_head]
        v=trace[v_name][0, :, kv_head].float(),
        scale=1.0 / cfg.score_divisor(layer),
        causal=causal,
        window=None if cross else cfg.window_of(layer),
        alibi_slope=slope,
        softcap=model.attention(where).softcap,
        z=trace[z_name][0, :, head].float(),
    )


def flash_for_head(
    model: Transformer, tokens: torch.Tensor, layer: int, head: int, *, block_q: int, block_k: int,
    stack: str | None = None, cross: bool = False, target_tokens: torch.Tensor | None = None,
) -> tuple[FlashResult, HeadInputs]:
    """Trace the model on tokens [1, pos] and run one head's attention tile by tile.

    result.output equals inputs.z (the model's hook_z) to float precision.
    """
    names = head_stage_names(model, layer, stack=stack, cross=cross)
    target = target_tokens if model.cfg.architecture == "encoder-decoder" else None
    _, trace = model.run_with_trace(tokens, names, target_tokens=target)
    inputs = head_inputs(model, trace, layer, head, stack=stack, cross=cross)
    result = flash_attention(
        inputs.q, inputs.k, inputs.v, block_q=block_q, block_k=block_k, causal=inputs.causal,
        scale=inputs.scale, alibi_slope=inputs.alibi_slope, window=inputs.window, softcap=inputs.softcap,
    )
    return result, inputs


def differences(result: FlashResult, inputs: HeadInputs) -> tuple[float, float]:
    """max |tiled output − the model's hook_z| and max |tiled output − naive softmax(QKᵀ)V| (0 with no query)."""
    if inputs.q.shape[0] == 0:
        return 0.0, 0.0
    naive = naive_attention(inputs.q, inputs.k, inputs.v, causal=inputs.causal, scale=inputs.scale,
                            alibi_slope=inputs.alibi_slope, window=inputs.window, softcap=inputs.softcap)
    return float((result.output - inputs.z).abs().max()), float((result.output - naive).abs().max())
