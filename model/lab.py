"""The lab's experiments: the claims the textbook makes about attention, measured.

Pure functions on tensors (and on a model where a claim is about one), each reading like the
claim it checks. The web layer (app/answers/lab.py) only picks and serializes what these return.

- scaling:    Var(q·k) = d_k for unit-variance q, k; softmax rows saturate without ÷√d_k
- masks:      causal, bidirectional, sliding-window, padding and cross masks (the model's own
              `attention_allowed`), and the model's patterns when every layer uses one of them
- positions:  sinusoidal PE·PEᵀ falls with distance; RoPE scores depend on m − n only; ALiBi
- parameters: counts per component; h heads of width d_model/h cost what one head of d_model costs
- sampling:   temperature, top-k and top-p applied to a next-token distribution; seeded draws
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from model.config import TransformerConfig
from model.hooks import Edit, Trace
from model.layers import Attention
from model.positional import apply_rope, sinusoidal_table
from model.transformer import Transformer, attention_allowed, distinct_state_dict

# ---------------------------------------------------------------- scaling


def qk_variance(d_ks: Sequence[int], samples: int, seed: int) -> dict[str, list[float]]:
    """For q, k with unit-variance entries: Var(q·k) ≈ d_k, and Var(q·k / √d_k) ≈ 1."""
    generator = torch.Generator().manual_seed(seed)
    variance, scaled = [], []
    for d_k in d_ks:
        q = torch.randn(samples, d_k, generator=generator, dtype=torch.float64)  # [sample, d_k]
        k = torch.randn(samples, d_k, generator=generator, dtype=torch.float64)
        dots = (q * k).sum(-1)  # [sample]
        variance.append(float(dots.var()))
        scaled.append(float((dots / math.sqrt(d_k)).var()))
    return {"variance": variance, "scaled_variance": scaled}


def row_statistics(scores: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(max weight, entropy in nats) of softmax over the last dim; -inf cells are hidden keys.

    scores: [..., k_pos] -> two tensors [...]. A row with no visible key has weight 0, entropy 0.
    """
    weights = torch.softmax(scores.double(), dim=-1).nan_to_num(0.0)  # [..., k_pos]
    logs = torch.where(weights > 0, weights.log(), torch.zeros_like(weights))
    return weights.amax(-1), -(weights * logs).sum(-1)


def softmax_sharpness(d_ks: Sequence[int], n_keys: int, rows: int, seed: int) -> dict[str, list[float]]:
    """Mean max weight and entropy of softmax rows over n_keys random keys, with and without ÷√d_k.

    A uniform row has max weight 1/n_keys and entropy ln(n_keys); a saturated one 1 and 0.
    """
    generator = torch.Generator().manual_seed(seed + 1)
    out: dict[str, list[float]] = {"max_scaled": [], "max_unscaled": [], "entropy_scaled": [],
                                   "entropy_unscaled": []}
    for d_k in d_ks:
        q = torch.randn(rows, d_k, generator=generator, dtype=torch.float64)  # [row, d_k]
        k = torch.randn(n_keys, d_k, generator=generator, dtype=torch.float64)  # [key, d_k]
        raw = q @ k.T  # [row, key]
        for label, scores in (("scaled", raw / math.sqrt(d_k)), ("unscaled", raw)):
            top, entropy = row_statistics(scores)
            out[f"max_{label}"].append(float(top.mean()))
            out[f"entropy_{label}"].append(float(entropy.mean()))
    return out


def head_statistics(raw: torch.Tensor, attn_scores: torch.Tensor, d_head: int) -> dict[str, list[float]]:
    """The same statistics on a model's real scores, per head.

    raw: [head, q_pos, k_pos] Q·Kᵀ; attn_scores: the same scaled, biased and masked (-inf hidden):
    the softmax input. Without ÷√d_head the softmax sees attn_scores + raw·(1 − 1/√d_head) = raw + bias,
    as the `no_scale` intervention does. Variances are over the visible cells; `entropy_uniform` is
    the mean ln(visible keys), the entropy of a row that spreads evenly.
    """
    visible = torch.isfinite(attn_scores)  # [head, q_pos, k_pos]
    unscaled = attn_scores.double() + raw.double() * (1 - 1 / math.sqrt(d_head))  # hidden cells stay -inf
    max_s, ent_s = row_statistics(attn_scores)  # [head, q_pos]
    max_u, ent_u = row_statistics(unscaled)
    out: dict[str, list[float]] = {"var_raw": [], "var_scaled": []}
    for head in range(raw.shape[0]):
        cells = visible[head]
        enough = int(cells.sum()) > 1
        out["var_raw"].append(float(raw[head].double()[cells].var()) if enough else 0.0)
        out["var_scaled"].append(float((raw[head].double() / math.sqrt(d_head))[cells].var()) if enough else 0.0)
    return {**out, "max_scaled": max_s.mean(-1).tolist(), "max_unscaled": max_u.mean(-1).tolist(),
            "entropy_scaled": ent_s.mean(-1).tolist(), "entropy_unscaled": ent_u.mean(-1).tolist(),
            "entropy_uniform": visible.sum(-1).clamp(min=1).double().log().mean(-1).tolist()}


# ---------------------------------------------------------------- masks


def mask_set(n: int, shorter: int, n_target: int, window: int, causal: bool) -> dict[str, torch.Tensor]:
    """Boolean masks (True: the query may see the key), from the model's own `attention_allowed`.

    causal, bidirectional, sliding [q_pos, k_pos] (n × n); padding [batch 2, q_pos, k_pos]
    for a batch of the sentence and its first `shorter` tokens padded to n; cross [batch 2,
    target q_pos, source k_pos]: every decoder position sees every real source token.
    """
    cpu = torch.device("cpu")
    real = torch.zeros(2, n, dtype=torch.bool)  # [batch, pos]
    real[0] = True
    real[1, :shorter] = True

    def square(**kw: Any) -> torch.Tensor:
        allowed = attention_allowed(n, n, key_padding=None, device=cpu, **kw)
        return torch.ones(n, n, dtype=torch.bool) if allowed is None else allowed[0, 0]

    padding = attention_allowed(n, n, causal=causal, window=None, key_padding=real, device=cpu)
    cross = attention_allowed(n_target, n, causal=False, window=None, key_padding=real, device=cpu)
    assert padding is not None and cross is not None
    return {
        "causal": square(causal=True, window=None),
        "bidirectional": square(causal=False, window=None),
        "sliding": square(causal=causal, window=window),
        "padding": padding[:, 0].expand(2, n, n),  # [batch, q_pos, k_pos]
        "cross": cross[:, 0].expand(2, n_target, n),
    }


def self_attention_prefixes(model: Transformer, stack: str) -> list[str]:
    """`{stack}blocks.{i}.attn.` for every layer of one stack ("" or "encoder." / "decoder.")."""
    n = model.cfg.decoder_layers if stack == "decoder." else model.cfg.n_layers
    return [f"{stack}blocks.{i}.attn." for i in range(n)]


def patterns_under_mask(model: Transformer, tokens: torch.Tensor, allowed: torch.Tensor, stack: str,
                        layer: int, **kwargs: torch.Tensor | None) -> torch.Tensor:
    """Layer `layer`'s pattern when every self-attention layer of `stack` uses `allowed` as its mask.

    tokens: [batch, pos]; allowed: bool [q_pos, k_pos] -> pattern [batch, head, q_pos, k_pos].
    Each layer's softmax input becomes its scaled scores with the cells `allowed` hides set to -inf.
    """
    prefixes = self_attention_prefixes(model, stack)

    def remasked(attn: str) -> Edit:
        def edit(_: torch.Tensor, trace: Trace) -> torch.Tensor:
            return trace[attn + "hook_scores_scaled"].masked_fill(~allowed, float("-inf"))

        return edit

    edits = {p + "hook_attn_scores": [remasked(p)] for p in prefixes}
    wanted = [p + "hook_scores_scaled" for p in prefixes] + [prefixes[layer] + "hook_pattern"]
    with torch.inference_mode(), Trace(wanted, edits) as trace:
        model(tokens, **kwargs)
    return trace[prefixes[layer] + "hook_pattern"]


def padded_run(model: Transformer, tokens: torch.Tensor, shorter: int, names: Sequence[str],
               target: torch.Tensor | None = None) -> Trace:
    """The model on a batch of [sentence, its first `shorter` tokens padded to the same length].

    tokens: [1, pos] (target: [1, target_pos] for encoder-decoders); records `names`, batch 2.
    """
    batch = tokens.repeat(2, 1)  # [2, pos]; the padded row keeps its ids, the mask hides them
    real = torch.ones_like(batch, dtype=torch.bool)
    real[1, shorter:] = False
    kwargs: dict[str, torch.Tensor] = {"padding_mask": real}
    if target is not None:
        kwargs["target_tokens"] = target.repeat(2, 1)
    with torch.inference_mode(), Trace(names) as trace:
        model(batch, **kwargs)
    return trace


# ---------------------------------------------------------------- positions


def sinusoidal_similarity(length: int, d_model: int) -> dict[str, torch.Tensor]:
    """PE [pos, d_model], PE·PEᵀ [pos, pos], and the mean similarity at each distance [pos]."""
    table = sinusoidal_table(length, d_model)
    return {"table": table, **similarity(table)}


def similarity(table: torch.Tensor) -> dict[str, torch.Tensor]:
    """table [pos, d] -> {"similarity": table·tableᵀ [pos, pos], "by_distance": mean over |m − n| = d [pos]}."""
    sim = table.double() @ table.double().T  # [pos, pos]
    n = table.shape[0]
    by_distance = torch.stack([torch.diagonal(sim, offset=d).mean() for d in range(n)])
    return {"similarity": sim.float(), "by_distance": by_distance.float()}


def rope_angles64(n_pos: int, d_head: int, base: float) -> torch.Tensor:
    """model.positional.rope_angles in float64: angle[pos, i] = pos · base^(−2i/d_head).  [pos, pair]

    float64 so that far positions (angles of hundreds of radians) keep the 1e-5 equality visible.
    """
    inv_freq = 1.0 / torch.pow(torch.tensor(base, dtype=torch.float64),
                               torch.arange(0, d_head, 2, dtype=torch.float64) / d_head)
    return torch.outer(torch.arange(n_pos, dtype=torch.float64), inv_freq)


def rope_pair(length: int, d_head: int, base: float, pair: int) -> dict[str, torch.Tensor]:
    """Dimension pair (i, i + d_head/2) of the vector (1, 0) rotated at each position.  [pos, 2], [pos]"""
    angles = rope_angles64(length, d_head, base)[:, pair]  # [pos]
    return {"points": torch.stack([angles.cos(), angles.sin()], dim=-1).float(), "angles": angles.float()}


def rope_relative_scores(length: int, d_head: int, base: float, seed: int) -> dict[str, Any]:
    """For one random q and k: score[m, n] = RoPE(q, m) · RoPE(k, n), which depends on m − n only.

    Returns scores [m, n] and, per offset m − n, the spread (max − min) of the scores that share it.
    """
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(d_head, generator=generator, dtype=torch.float64)
    k = torch.randn(d_head, generator=generator, dtype=torch.float64)
    angles = rope_angles64(length, d_head, base)  # [pos, pair]
    rq = apply_rope(q.expand(1, length, 1, d_head), angles)[0, :, 0]  # [pos, d_head]
    rk = apply_rope(k.expand(1, length, 1, d_head), angles)[0, :, 0]
    scores = rq @ rk.T  # [m, n]
    offsets = range(-(length - 1), length)
    spread = [float(torch.diagonal(scores, offset=-o).max() - torch.diagonal(scores, offset=-o).min())
              for o in offsets]
    by_offset = [float(torch.diagonal(scores, offset=-o).mean()) for o in offsets]
    return {"scores": scores, "offsets": list(offsets), "spread": spread, "by_offset": by_offset,
            "max_spread": max(spread), "plain": float(q @ k)}


# ---------------------------------------------------------------- parameters


def parameter_report(model: Transformer) -> dict[str, Any]:
    """Counts per component, and the sum of the saved state dict (every shared tensor once)."""
    counts = model.parameter_counts()
    state_total = sum(t.numel() for t in distinct_state_dict(model).values())
    blocks = counts["attention"] + counts["mlp"]
    return {"counts": counts, "state_dict_total": state_total,
            "ffn_share": counts["mlp"] / counts["total"] if counts["total"] else 0.0,
            "ffn_share_of_blocks": counts["mlp"] / blocks if blocks else 0.0}


def attention_counts(cfg: TransformerConfig, n_heads: int, n_kv_heads: int | None = None) -> dict[str, int]:
    """Parameters of one self-attention layer with n_heads heads of width d_model / n_heads.

    Built on the meta device (nothing allocated). Positions are left out: RoPE and ALiBi have none.
    """
    changed = cfg.replace(n_heads=n_heads, n_kv_heads=n_kv_heads, pos_encoding="none", sliding_window=None)
    with torch.device("meta"):
        layer = Attention(changed, causal=cfg.causal)
    count = {name: sum(p.numel() for p in getattr(layer, name).parameters()) for name in ("W_Q", "W_K", "W_V", "W_O")}
    return {**count, "kv": count["W_K"] + count["W_V"], "total": sum(count.values())}


def divisors(n: int, limit: int = 64) -> list[int]:
    return [h for h in range(1, min(n, limit) + 1) if n % h == 0]


def head_splits(cfg: TransformerConfig) -> list[dict[str, int]]:
    """One layer's attention parameters for every head count h dividing d_model (width d_model / h each)."""
    return [{"n_heads": h, "d_head": cfg.d_model // h, **attention_counts(cfg, h)}
            for h in divisors(cfg.d_model) if h <= 64]


def kv_sharing(cfg: TransformerConfig) -> list[dict[str, Any]]:
    """MHA (a K/V head per query head), GQA (groups share one) and MQA (one K/V head): one layer's counts."""
    rows = []
    for kv in reversed(divisors(cfg.n_heads)):
        kind = "MHA" if kv == cfg.n_heads else "MQA" if kv == 1 else "GQA"
        rows.append({"kind": kind, "n_kv_heads": kv, **attention_counts(cfg, cfg.n_heads, kv)})
    return rows


# ---------------------------------------------------------------- sampling


def sampling_distributions(logits: torch.Tensor, temperature: float, top_k: int | None,
                           top_p: float | None) -> dict[str, torch.Tensor]:
    """Each step of a sampler, from logits [d_vocab] to the distribution it draws from.

    original softmax(logits); tempered softmax(logits / T); top_k keeps the k most likely
    (renormalised); top_p then keeps the smallest most-likely set whose mass reaches p. [d_vocab] each.
    """
    if temperature <= 0:
        raise ValueError("temperature must be positive")
    original = torch.softmax(logits.double(), dim=-1)
    tempered = torch.softmax(logits.double() / temperature, dim=-1)
    kept = tempered.clone()
    if top_k is not None and top_k < kept.shape[-1]:
        threshold = torch.topk(kept, top_k).values[-1]
        kept = torch.where(kept >= threshold, kept, torch.zeros_like(kept))
        kept = kept / kept.sum()
    after_k = kept.clone()
    if top_p is not None and top_p < 1:
        values, order = torch.sort(kept, descending=True)
        before = values.cumsum(-1) - values  # mass of the tokens ranked above each one
        keep_sorted = before < top_p  # the first token always stays
        keep = torch.zeros_like(kept, dtype=torch.bool)
        keep[order[keep_sorted]] = True
        kept = torch.where(keep, kept, torch.zeros_like(kept))
        kept = kept / kept.sum()
    return {"original": original, "tempered": tempered, "top_k": after_k, "final": kept}


def seeded_draws(probs: torch.Tensor, n: int, seed: int) -> list[int]:
    """n independent draws from probs [d_vocab] with a generator seeded by `seed`: the same seed, the same ids."""
    generator = torch.Generator().manual_seed(seed)
    return torch.multinomial(probs.double(), n, replacement=True, generator=generator).tolist()


def entropy(probs: torch.Tensor) -> float:
    """Entropy in nats of a distribution [d_vocab]."""
    p = probs.double()
    return float(-(torch.where(p > 0, p * p.log(), torch.zeros_like(p))).sum())
