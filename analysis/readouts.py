"""Read-outs the explorer asks of a traced model: slices, norms, next-token distributions, positions.

The web layer only serializes; every computation on tensors it serves lives here, next to
the model, so the numbers on the page come from the same code the tests check.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from model.config import TransformerConfig
from model.generate import sampling_distributions
from model.positional import alibi_bias, alibi_slopes
from model.transformer import Transformer

# ---------------------------------------------------------------- slicing a trace


def kv_heads_for(cfg: TransformerConfig, heads: Sequence[int]) -> list[int]:
    """The key/value heads that the given query heads read (GQA groups), in order, without repeats."""
    group = cfg.n_heads // cfg.kv_heads
    return sorted({h // group for h in heads})


def select_heads(
    tensor: torch.Tensor, dims: Sequence[str], heads: Sequence[int], cfg: TransformerConfig
) -> torch.Tensor:
    """Keep only the chosen heads along the `head` dimension (or their K/V heads along `kv_head`)."""
    if "head" in dims:
        index = torch.tensor(list(heads), dtype=torch.long, device=tensor.device)
        return tensor.index_select(list(dims).index("head"), index)
    if "kv_head" in dims:
        index = torch.tensor(kv_heads_for(cfg, heads), dtype=torch.long, device=tensor.device)
        return tensor.index_select(list(dims).index("kv_head"), index)
    return tensor


# ---------------------------------------------------------------- statistics


def residual_norms(x: torch.Tensor) -> torch.Tensor:
    """L2 norm of each position's vector: [..., pos, d_model] -> [..., pos]."""
    return torch.linalg.vector_norm(x.float(), dim=-1)


# ---------------------------------------------------------------- next token


def next_token_distribution(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """softmax(logits / T) over the vocabulary.  logits: [d_vocab] -> probs [d_vocab] (sums to 1)."""
    if temperature <= 0:
        raise ValueError("temperature must be positive")
    return torch.softmax(logits.float() / temperature, dim=-1)


def prediction(logits: torch.Tensor, temperature: float, k: int) -> dict[str, list[float] | list[int] | float]:
    """The k most likely next tokens: ids, probabilities, logits, and the probability left for the rest.

    logits: [d_vocab] at one position. The k probabilities plus `rest` sum to 1.
    """
    probs = next_token_distribution(logits, temperature)  # [d_vocab]
    # ranked by logit, the order softmax keeps at any T > 0: at a very low temperature every probability
    # but the first rounds to 0, and ranking those zeros would list arbitrary tokens
    ids = torch.topk(logits.float(), max(1, min(k, probs.shape[-1]))).indices  # [k]
    values = probs[ids]
    rest = float((1.0 - values.sum()).clamp(min=0.0))
    return {"ids": ids.tolist(), "probs": values.tolist(), "logits": logits.float()[ids].tolist(), "rest": rest}


def sampling_readout(
    logits: torch.Tensor, temperature: float, top_k: int | None, top_p: float | None, rows: int
) -> dict[str, list[float] | list[int] | float | int]:
    """The distribution the sampler draws from (after temperature, top-k, top-p), most likely first.

    logits: [d_vocab]. `kept` tokens have a non-zero probability; the first `rows` of them are
    listed (ids, probs) and `unlisted_prob` is the kept mass beyond them (0 when all are listed).
    """
    final = sampling_distributions(logits, temperature, top_k, top_p)["final"]  # [d_vocab], float64
    kept = int((final > 0).sum())
    values, ids = torch.topk(final, max(1, min(rows, kept)))  # [rows]
    unlisted = float((1.0 - values.sum()).clamp(min=0.0)) if kept > len(ids) else 0.0
    return {"ids": ids.tolist(), "probs": values.tolist(), "kept": kept, "unlisted_prob": unlisted}


def sequence_loss(logits: torch.Tensor, ids: Sequence[int]) -> float | None:
    """Mean cross-entropy of each next token given the ones before it, in nats (None: fewer than 2 tokens).

    logits: [pos, d_vocab] of the stack that reads `ids` (the decoder input for encoder-decoders).
    """
    if len(ids) < 2:
        return None
    targets = torch.tensor(list(ids[1:]), device=logits.device)  # [pos - 1]
    return float(torch.nn.functional.cross_entropy(logits[:-1].float(), targets))


# ---------------------------------------------------------------- positional encodings


def position_table(model: Transformer) -> torch.Tensor:
    """The table the first stack adds to its token vectors (an embedding kind's), detached.  [n_ctx, d_model]"""
    stack = model.encoder if model.cfg.architecture == "encoder-decoder" else model.stack
    return stack.embed.position_table().detach().float().cpu()


def learned_positions(model: Transformer, length: int) -> dict[str, torch.Tensor]:
    """The learned position table of the model's first stack.  [pos, d_model]"""
    weight = position_table(model)
    return {"table": weight[: min(length, weight.shape[0])]}


def alibi(n_heads: int, length: int, causal: bool) -> dict[str, torch.Tensor]:
    return {
        "slopes": alibi_slopes(n_heads),  # [head]
        "bias": alibi_bias(n_heads, length, length, causal),  # [head, q_pos, k_pos]
    }
