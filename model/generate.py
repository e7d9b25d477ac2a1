"""The one decoding loop and the one sampler: greedy (temperature 0) or seeded sampling after
temperature, top-k and top-p, one forward pass per token.

Every draw of a token, anywhere in the project, goes through `draw_tokens` from the distribution
`sampling_distributions(...)["final"]` returns: the decoding loop (`choose_token`), /api/predict's
continuation and the sampling lab's draws. What a client is shown is what is sampled from.

Every caller decodes through here: the API's continuation, the training samples and the
translation evaluation. `generate` extends one sequence; `generate_greedy_batch` decodes a
batch of encoder-decoder sources at once (evaluation speed) with the same step function.

Both decode with a KV cache by default (model/kv_cache.py): the first step reads the whole
prompt, every later step only the token just chosen, and the logits equal a full recomputation's
(tests/model/test_kv_cache.py). Interventions recompute every step: an edit such as a window or
an unmasked pattern reads the whole sequence's scores, which a cached step never forms.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from model.edits import Interventions
from model.hooks import Trace
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


def draw_tokens(probs: torch.Tensor, n: int, generator: torch.Generator) -> list[int]:
    """The one draw: n independent ids from probs [d_vocab] (with replacement), advancing `generator`."""
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


@dataclass(frozen=True)
class Step:
    """One decoding step as `generate(on_step=...)` sees it: after the forward pass, before the token is kept."""

    index: int  # 0, 1, ...
    sequence: list[int]  # the ids being extended (decoder input for encoder-decoders), without this step's token
    fed: int  # positions this step's forward pass read: the whole prompt, then 1 (all of them without a cache)
    logits: torch.Tensor  # [d_vocab], the step's next-token logits
    cache: KVCache | None  # the cache after this step's forward pass (it holds `sequence`)
    token: int  # the token chosen


@torch.inference_mode()
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
    use_cache: bool = True,
    on_step: Callable[[Step], None] | None = None,
) -> list[int]:
    """Up to max_new_tokens new ids (the new ones only), seeded so the same call gives the same text.

    Each token: argmax at temperature 0, else a draw after temperature, top_k and top_p (choose_token).

    Decoder-only models extend `ids`; encoder-decoder models extend `target_ids` (the decoder
    input) while the source `ids` stay fixed. Stops before appending `stop_id`, and when the
    sequence being extended reaches `max_len` (default: the model's context, cfg.n_ctx).
    `edits` (model.edits) change every step's forward pass the same way.
    use_cache: reuse earlier positions' keys and values (same logits; ignored under edits).
    on_step: called with every step (model.generate.Step), to watch the loop (the lab's KV-cache decoding).
    """
    if not model.cfg.lm_head or model.cfg.architecture == "encoder":
        raise ValueError("only decoder and encoder-decoder models with an lm_head generate")
    enc_dec = model.cfg.architecture == "encoder-decoder"
    if enc_dec and target_ids is None:
        raise ValueError("an encoder-decoder model extends target_ids (the decoder input): pass them")
    limit = model.cfg.n_ctx if max_len is None else max_len
    generator = torch.Generator().manual_seed(seed)
    device = model.device
    source = torch.tensor([list(ids)], dtype=torch.long, device=device)  # [1, pos]
    growing = list(target_ids) if enc_dec and target_ids is not None else list(ids)
    new_ids: list[int] = []
    cfg = model.cfg
    hooks, needed = edits.hooks(model.trace_names, cfg.d_head, cfg.scale_attn_by_layer) if edits else ({}, set())
    cache = KVCache() if use_cache and not edits else None
    for index in range(max_new_tokens):
        if len(growing) >= limit:
            break
        unseen = growing[cache.length :] if cache is not None else growing  # what the cache lacks: all, then 1
        sequence = torch.tensor([unseen], dtype=torch.long, device=device)  # [1, pos]
        # logits [1, d_vocab]: encoder-decoder models grow the decoder input (source fixed), others the ids
        with Trace(needed, hooks):  # records only what the edits read; no edits: a plain forward
            if enc_dec:
                logits = next_token_logits(model, source, sequence, cache=cache)
            else:
                logits = next_token_logits(model, sequence, cache=cache)
        token = choose_token(logits[0].cpu(), temperature, top_k, generator, top_p)
        if on_step is not None:
            on_step(Step(index, list(growing), len(unseen), logits[0], cache, token))
        if stop_id is not None and token == stop_id:
            break
        new_ids.append(token)
        growing.append(token)
    return new_ids


@torch.inference_mode()
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
    """Greedy decoding of several encoder-decoder sources at once: each row's new ids, without stop_id.

    The decoder input starts as [start_id]; a row is done once it produces stop_id, and the
    loop ends when every row is done, after max_new_tokens, or at the context (cfg.n_ctx).
    """
    if model.cfg.architecture != "encoder-decoder":
        raise ValueError("generate_greedy_batch decodes encoder-decoder models")
    device = model.device
    n_rows = len(sources)
    source_len = max(len(s) for s in sources)
    source = torch.full((n_rows, source_len), pad_id, dtype=torch.long, device=device)  # [batch, pos]
    source_mask = torch.zeros(n_rows, source_len, dtype=torch.bool, device=device)  # [batch, pos]
    for row, ids in enumerate(sources):
        source[row, : len(ids)] = torch.tensor(list(ids), dtype=torch.long)
        source_mask[row, : len(ids)] = True
    target = torch.full((n_rows, 1), start_id, dtype=torch.long, device=device)  # [batch, target_pos]
    done = torch.zeros(n_rows, dtype=torch.bool, device=device)  # [batch]
    cache = KVCache() if use_cache else None
    for _ in range(min(max_new_tokens, model.cfg.n_ctx - 1)):
        unseen = target[:, cache.length :] if cache is not None else target  # [batch, new target_pos]
        logits = next_token_logits(model, source, unseen, source_mask, cache)  # [batch, d_vocab]
        token = logits.argmax(-1)  # [batch]
        token = torch.where(done, torch.full_like(token, pad_id), token)  # finished rows only pad
        target = torch.cat([target, token[:, None]], dim=1)  # [batch, target_pos + 1]
        done |= token == stop_id
        if bool(done.all()):
            break
    decoded: list[list[int]] = []
    for row_ids in target[:, 1:].tolist():
        kept = row_ids[: row_ids.index(stop_id)] if stop_id in row_ids else row_ids
        decoded.append([i for i in kept if i != pad_id])
    return decoded
