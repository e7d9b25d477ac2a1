"""The one decoding loop and the one sampler: greedy (temperature 0) or seeded sampling after
temperature, top-k and top-p, one forward pass per token.

Every draw of a token, anywhere in the project, goes through `draw_tokens` from the distribution
`sampling_distributions(...)["final"]` returns: the decoding loop (`choose_token`), /api/predict's
continuation and the sampling lab's draws. What a client is shown is what is sampled from.

Every caller decodes through here, and through one loop, `decode`: one forward pass per step
over a batch of rows, with or without a KV cache. `generate` is that loop on one sequence (the
API's continuation, the training samples, the lab's KV-cache decoding); `generate_greedy_batch`
is it on a padded batch of encoder-decoder sources (the translation evaluation's speed).

It decodes with a KV cache by default (model/kv_cache.py): the first step reads the whole
prompt, every later step only the tokens just chosen, and the logits equal a full recomputation's
(tests/model/test_kv_cache.py). Without the cache (use_cache=False) each step reads everything.
Interventions recompute every step: an edit such as a window or an unmasked pattern reads the
whole sequence's scores, which a cached step never forms. Position-wise edits (`position_edits`: each
position's vector changed on its own, such as a steering vector added to the residual stream) keep
the cache: the cached positions were computed under the same edit, and each new step applies it to
its new position, so every step's logits equal recomputing the whole sequence under the edit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import torch

from model.device import one_row
from model.edits import Interventions
from model.hooks import Edit, Trace
from model.kv_cache import KVCache
from model.transformer import Transformer


def next_token_logits(
    model: Transformer,
    source: torch.Tensor,
    target: torch.Tensor | None = None,
    source_mask: torch.Tensor | None = None,
    cache: KVCache | None = None,
) -> torch.Tensor:
    """The logits for the token after each row: [batch, d_vocab].

    source: [batch, pos] ids. For encoder-decoder models `target` [batch, target_pos] is the
    decoder input so far and `source_mask` [batch, pos] marks the real (non-padding) source ids.
    With a `cache`, pass only what it does not hold yet: the new ids (decoder) or new target ids.
    """
    if model.cfg.architecture == "encoder-decoder":
        if target is None:
            raise ValueError("an encoder-decoder model decodes a target: pass target ids")
        logits = model(source, target_tokens=target, padding_mask=source_mask, cache=cache)  # [batch, pos, d_vocab]
    else:
        logits = model(source, cache=cache)  # [batch, pos, d_vocab]
    return logits[:, -1]  # [batch, d_vocab]


def sampling_distributions(logits: torch.Tensor, temperature: float, top_k: int | None,
                           top_p: float | None) -> dict[str, torch.Tensor]:
    """Each step of the sampler, from logits [d_vocab] to the distribution it draws from ("final").

    original softmax(logits); tempered softmax(logits / T); top_k keeps the k most likely
    (renormalised; tokens tied with the k-th stay, as in transformers' TopKLogitsWarper); top_p then
    keeps the smallest most-likely set whose mass reaches p. [d_vocab] each, float64.
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


class NonFiniteError(ValueError):
    """A pass computed NaN or Inf where a number is needed (an overflow, with finite weights): said, not hidden."""


def draw_tokens(probs: torch.Tensor, n: int, generator: torch.Generator) -> list[int]:
    """The one draw: n independent ids from probs [d_vocab] (with replacement), advancing `generator`."""
    if not bool(torch.isfinite(probs).all()):
        raise NonFiniteError("the next-token probabilities are not finite numbers: a NaN or an infinity arose in "
                             "the model's pass (an overflow), so nothing can be drawn from them")
    return torch.multinomial(probs.double(), n, replacement=True, generator=generator).tolist()


def seeded_draws(probs: torch.Tensor, n: int, seed: int) -> list[int]:
    """n independent draws from probs [d_vocab] with a generator seeded by `seed`: the same seed, the same ids."""
    return draw_tokens(probs, n, torch.Generator().manual_seed(seed))


def choose_token(
    logits: torch.Tensor, temperature: float, top_k: int | None, generator: torch.Generator,
    top_p: float | None = None,
) -> int:
    """One token from logits [d_vocab]: argmax at temperature 0, else one draw from the sampler's final distribution.

    With a generator seeded by s, the first token equals seeded_draws(final, 1, s)[0].
    """
    if temperature <= 0:
        return int(logits.argmax())
    final = sampling_distributions(logits, temperature, top_k, top_p)["final"]  # [d_vocab]
    return draw_tokens(final, 1, generator)[0]


def next_tokens(logits: torch.Tensor, temperature: float, top_k: int | None, top_p: float | None,
                generator: torch.Generator) -> torch.Tensor:
    """Each row's token from logits [batch, d_vocab]: [batch] ids, argmax at temperature 0 (on the logits' device),
    else choose_token row after row from the one generator."""
    if temperature <= 0:
        return logits.argmax(-1)  # [batch]
    rows = [choose_token(row.cpu(), temperature, top_k, generator, top_p) for row in logits]
    return torch.tensor(rows, dtype=torch.long, device=logits.device)  # [batch]


@dataclass(frozen=True)
class Step:
    """One decoding step as `decode(on_step=...)` sees it: after the forward pass, before the tokens are kept."""

    index: int  # 0, 1, ...
    sequences: torch.Tensor  # [batch, pos] the ids being extended (decoder input), without this step's tokens
    fed: int  # positions this step's forward pass read: the whole prompt, then 1 (all of them without a cache)
    logits: torch.Tensor  # [batch, d_vocab], the step's next-token logits
    cache: KVCache | None  # the cache after this step's forward pass (it holds `sequences`)
    tokens: torch.Tensor  # [batch] the tokens chosen (finished rows: the pad)


@torch.inference_mode()
def decode(
    model: Transformer,
    sources: torch.Tensor,
    targets: torch.Tensor | None = None,
    *,
    source_mask: torch.Tensor | None = None,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
    max_len: int | None = None,
    stop_id: int | None = None,
    pad_id: int | None = None,
    edits: Interventions | None = None,
    position_edits: Mapping[str, Sequence[Edit]] | None = None,
    use_cache: bool = True,
    on_step: Callable[[Step], None] | None = None,
) -> list[list[int]]:
    """The one decoding loop: one forward pass per step, one token per row (next_tokens), up to max_new_tokens.

    sources [batch, pos] ids. Decoder-only models extend them; encoder-decoder models extend
    `targets` [batch, target_pos] (the decoder input) while the sources, with `source_mask`
    [batch, pos] marking their real ids, stay fixed. A row is finished once it chooses `stop_id`
    and is fed `pad_id` (default: stop_id) from then on; the loop ends when every row is, after
    max_new_tokens, or when the sequences being extended reach `max_len` (default: cfg.n_ctx).
    Returns each row's new ids before its stop_id.

    With a cache (model/kv_cache.py) the first step reads the whole prompt and every later step
    only the tokens just chosen; without one (use_cache False, or `edits`) every step reads all.
    `position_edits` (stage name -> trace edits that change each position's vector by itself, never
    reading other positions) apply at every step, to whatever positions it reads, cache or not.
    """
    cfg = model.cfg
    if not cfg.lm_head or cfg.architecture == "encoder":
        raise ValueError("only decoder and encoder-decoder models with an lm_head generate")
    enc_dec = cfg.architecture == "encoder-decoder"
    if enc_dec and targets is None:
        raise ValueError("an encoder-decoder model extends target_ids (the decoder input): pass them")
    growing = targets if enc_dec and targets is not None else sources  # [batch, pos]
    limit = cfg.n_ctx if max_len is None else max_len
    generator = torch.Generator().manual_seed(0) if generator is None else generator
    score_dim = cfg.d_head if cfg.score_scale_dim is None else cfg.score_scale_dim  # scores ÷ √ this (Gemma's own)
    hooks, needed = edits.hooks(model.trace_names, score_dim, cfg.scale_attn_by_layer) if edits else ({}, set())
    for name, more in (position_edits or {}).items():
        hooks[name] = [*hooks.get(name, ()), *more]
    cache = KVCache() if use_cache and not edits else None
    finished = torch.zeros(growing.shape[0], dtype=torch.bool, device=growing.device)  # [batch]
    filler = stop_id if pad_id is None else pad_id
    chosen: list[torch.Tensor] = []  # [batch] per step
    for index in range(max_new_tokens):
        if growing.shape[1] >= limit:
            break
        if cache is not None and cfg.rope_factors_at(cache.length) is not cfg.rope_factors_at(growing.shape[1]):
            cache = KVCache()  # longrope switches factor sets: every position's keys and values change (as in HF)
        unseen = growing[:, cache.length :] if cache is not None else growing  # what the cache lacks: all, then 1
        with Trace(needed, hooks):  # records only what the edits read; no edits: a plain forward
            if enc_dec:
                logits = next_token_logits(model, sources, unseen, source_mask, cache)  # [batch, d_vocab]
            else:
                logits = next_token_logits(model, unseen, cache=cache)  # [batch, d_vocab]
        tokens = next_tokens(logits, temperature, top_k, top_p, generator)  # [batch]
        if filler is not None:
            tokens = torch.where(finished, torch.full_like(tokens, filler), tokens)  # finished rows only pad
        if on_step is not None:
            on_step(Step(index, growing, unseen.shape[1], logits, cache, tokens))
        if stop_id is not None:
            finished |= tokens == stop_id
        if bool(finished.all()):
            break
        chosen.append(tokens)
        growing = torch.cat([growing, tokens[:, None]], dim=1)  # [batch, pos + 1]
    rows = torch.stack(chosen, dim=1).tolist() if chosen else [[] for _ in range(growing.shape[0])]
    return [row[: row.index(stop_id)] if stop_id in row else row for row in rows]


def generate(
    model: Transformer,
    ids: Sequence[int],
    *,
    target_ids: Sequence[int] | None = None,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    seed: int = 0,
    max_len: int | None = None,
    stop_id: int | None = None,
    edits: Interventions | None = None,
    position_edits: Mapping[str, Sequence[Edit]] | None = None,
    use_cache: bool = True,
    on_step: Callable[[Step], None] | None = None,
) -> list[int]:
    """Up to max_new_tokens new ids (the new ones only) after one sequence: decode() on a batch of one, seeded so
    the same call gives the same text.

    Each token: argmax at temperature 0, else a draw after temperature, top_k and top_p (choose_token).
    Decoder-only models extend `ids`; encoder-decoder models extend `target_ids` (the decoder input)
    while the source `ids` stay fixed. Stops before `stop_id` and at `max_len` (default: cfg.n_ctx).
    `edits` (model.edits) change every step's forward pass the same way; so do `position_edits` (decode()).
    use_cache: reuse earlier positions' keys and values (same logits; ignored under edits).
    on_step: called with every step (model.generate.Step), to watch the loop (the lab's KV-cache decoding).
    """
    device = model.device
    sources, targets = one_row(ids, device), one_row(target_ids, device)  # [1, pos], [1, target_pos]
    return decode(model, sources, targets, max_new_tokens=max_new_tokens, temperature=temperature, top_k=top_k,
                  top_p=top_p, generator=torch.Generator().manual_seed(seed), max_len=max_len, stop_id=stop_id,
                  edits=edits, position_edits=position_edits, use_cache=use_cache, on_step=on_step)[0]


def generate_greedy_batch(
    model: Transformer,
    sources: Sequence[Sequence[int]],
    *,
    start_id: int,
    stop_id: int,
    pad_id: int,
    max_new_tokens: int,
    use_cache: bool = True,
) -> list[list[int]]:
    """Greedy decoding of several encoder-decoder sources at once (evaluation speed): decode() on a padded batch.

    The decoder input starts as [start_id]; each row's new ids end before its stop_id, without pad_id
    (a pad the model predicts is no text).
    """
    if model.cfg.architecture != "encoder-decoder":
        raise ValueError("generate_greedy_batch decodes encoder-decoder models")
    device = model.device
    n_rows = len(sources)
    source_len = max(len(s) for s in sources)
    padded = torch.full((n_rows, source_len), pad_id, dtype=torch.long, device=device)  # [batch, pos]
    source_mask = torch.zeros(n_rows, source_len, dtype=torch.bool, device=device)  # [batch, pos]
    for row, ids in enumerate(sources):
        padded[row, : len(ids)] = torch.tensor(list(ids), dtype=torch.long)
        source_mask[row, : len(ids)] = True
    targets = torch.full((n_rows, 1), start_id, dtype=torch.long, device=device)  # [batch, target_pos]
    decoded = decode(model, padded, targets, source_mask=source_mask, max_new_tokens=max_new_tokens,
                     temperature=0.0, stop_id=stop_id, pad_id=pad_id, use_cache=use_cache)
    return [[i for i in row if i != pad_id] for row in decoded]
