"""Why ÷√d_k: Var(q·k) = d_k for unit-variance q, k, and softmax rows saturate without the scale.

A saturated row also stops learning: the gradient through softmax is its Jacobian

    ∂p/∂s = diag(p) − p pᵀ

which is all zeros when p is one-hot. `jacobian_norms` measures ‖∂p/∂s‖ per row by autograd on the
real scores, so the shrinking gradient is read, not assumed; `jacobian_closed_form` is the formula
the tests hold it to.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch


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
    weights = torch.softmax(scores.double(), dim=-1)  # [..., k_pos]
    weights = weights.masked_fill(torch.isneginf(scores).all(-1, keepdim=True), 0.0)  # only all-hidden rows: 0
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


def head_statistics(raw: torch.Tensor, attn_scores: torch.Tensor, divisor: float) -> dict[str, list[Any]]:
    """The same statistics on a model's real scores, per head.

    raw: [head, q_pos, k_pos] Q·Kᵀ; attn_scores: the same scaled, biased and masked (-inf hidden):
    the softmax input. `divisor`: what this layer divides Q·Kᵀ by (TransformerConfig.score_divisor:
    √d_head, times layer + 1 in GPT-2 models that scale by the inverse layer index). Without it the
    softmax sees attn_scores + raw·(1 − 1/divisor) = raw + bias, as the `no_scale` intervention does.
    Variances are over the visible cells; `entropy_uniform` is the mean ln(visible keys), the entropy
    of a row that spreads evenly.
    """
    visible = torch.isfinite(attn_scores)  # [head, q_pos, k_pos]
    unscaled = attn_scores.double() + raw.double() * (1 - 1 / divisor)  # hidden cells stay -inf
    max_s, ent_s = row_statistics(attn_scores)  # [head, q_pos]
    max_u, ent_u = row_statistics(unscaled)
    out: dict[str, list[float]] = {"var_raw": [], "var_scaled": []}
    for head in range(raw.shape[0]):
        cells = visible[head]
        enough = int(cells.sum()) > 1
        out["var_raw"].append(float(raw[head].double()[cells].var()) if enough else 0.0)
        out["var_scaled"].append(float((raw[head].double() / divisor)[cells].var()) if enough else 0.0)
    jac_s, jac_u = jacobian_norms(attn_scores), jacobian_norms(unscaled)  # [head, q_pos]
    return {**out, "max_scaled": max_s.mean(-1).tolist(), "max_unscaled": max_u.mean(-1).tolist(),
            "jacobian_scaled": jac_s.mean(-1).tolist(), "jacobian_unscaled": jac_u.mean(-1).tolist(),
            "jacobian_rows_scaled": jac_s.tolist(), "jacobian_rows_unscaled": jac_u.tolist(),
            "entropy_scaled": ent_s.mean(-1).tolist(), "entropy_unscaled": ent_u.mean(-1).tolist(),
            "entropy_uniform": visible.sum(-1).clamp(min=1).double().log().mean(-1).tolist()}


def softmax_jacobian(scores: torch.Tensor) -> torch.Tensor:
    """∂softmax(s)/∂s of every row, by autograd.  scores: [row, k_pos] -> [row, k_pos (output), k_pos (input)].

    -inf cells (hidden keys) get weight 0, and so a zero row and column: a hidden key passes no gradient.
    """
    def row_softmax(row: torch.Tensor) -> torch.Tensor:
        return torch.softmax(row, dim=-1)

    with torch.inference_mode(False), torch.enable_grad():
        rows = scores.detach().double().clone()  # a trace's tensors are inference tensors: autograd needs a copy
        jacobian = torch.func.vmap(torch.func.jacrev(row_softmax))(rows)
    return jacobian.nan_to_num(0.0).detach()


def jacobian_closed_form(weights: torch.Tensor) -> torch.Tensor:
    """diag(p) − p pᵀ for softmax weights p: [..., k_pos] -> [..., k_pos, k_pos]."""
    return torch.diag_embed(weights) - weights[..., :, None] * weights[..., None, :]


def jacobian_norms(scores: torch.Tensor) -> torch.Tensor:
    """‖∂softmax/∂scores‖ (Frobenius) per row, by autograd.  scores: [lead, q_pos, k_pos] -> [lead, q_pos].

    One leading index at a time, so no more than q_pos × k_pos² numbers are held. A row spread evenly over
    n keys has √(n − 1)/n; a one-hot row has 0 (no gradient reaches its scores).
    """
    norms = [softmax_jacobian(scores[i]).flatten(-2).norm(dim=-1) for i in range(scores.shape[0])]
    return torch.stack(norms) if norms else scores.new_zeros(scores.shape[:-1], dtype=torch.float64)


def uniform_entropy(n_keys: int) -> float:
    """ln(n_keys): the entropy of a row that spreads its weight evenly (float32, as the curves were reported)."""
    return float(torch.tensor(float(n_keys)).log())
