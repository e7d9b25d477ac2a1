"""Which keys a query may read: causal, bidirectional, sliding-window, padding and cross masks (the model's
own `attention_allowed`), and the model's patterns when every layer uses one of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from model.device import one_row
from model.hooks import Edit, Trace, stage_name
from model.transformer import Transformer, attention_allowed


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


def patterns_under_mask(model: Transformer, tokens: torch.Tensor, allowed: torch.Tensor, stack: str | None,
                        layer: int, **kwargs: torch.Tensor | None) -> torch.Tensor:
    """Layer `layer`'s pattern when every self-attention layer of `stack` uses `allowed` as its mask.

    tokens: [batch, pos]; allowed: bool [q_pos, k_pos] -> pattern [batch, head, q_pos, k_pos].
    Each layer's softmax input becomes its scaled scores (soft-capped where the model caps them, Gemma 2) with the
    cells `allowed` hides set to -inf.
    stack: as stage names spell it (model.hooks): None for a single stack, "encoder" or "decoder".
    """
    layers = range(len(model.stack_named(stack).blocks))

    def remasked(scaled: str) -> Edit:
        def edit(_: torch.Tensor, trace: Trace) -> torch.Tensor:
            return trace[scaled].masked_fill(~allowed, float("-inf"))

        return edit

    unmasked = "scores_capped" if model.cfg.attn_softcap is not None else "scores_scaled"  # what the mask reads
    edits = {stage_name("attn_scores", i, stack=stack): [remasked(stage_name(unmasked, i, stack=stack))]
             for i in layers}
    pattern = stage_name("pattern", layer, stack=stack)
    wanted = [stage_name(unmasked, i, stack=stack) for i in layers] + [pattern]
    with torch.inference_mode(), Trace(wanted, edits) as trace:
        model(tokens, **kwargs)
    return trace[pattern]


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


def masks_with_patterns(model: Transformer, ids: Sequence[int], target_ids: Sequence[int] | None, *, shorter: int,
                        window: int, layer: int, stack: str | None, causal: bool,
                        ) -> dict[str, tuple[torch.Tensor, torch.Tensor | None]]:
    """Each mask and the model's pattern at `layer` of `stack` (None: the model's one stack) under it.

    causal, bidirectional, sliding: mask [q_pos, k_pos], pattern [head, q_pos, k_pos] when every
    self-attention layer uses that mask; padding: mask and pattern [row, (head,) q_pos, k_pos] of the
    sentence batched with its first `shorter` tokens; cross (encoder-decoder only, else no pattern):
    the decoder's cross-attention in that batch. ids: the source; target_ids: the decoder input.
    """
    cfg = model.cfg
    enc_dec = cfg.architecture == "encoder-decoder"
    n = len(ids)
    masks = mask_set(n, shorter, len(target_ids) if target_ids is not None else n, window, causal)
    tokens, target = one_row(ids, model.device), one_row(target_ids, model.device)  # [1, pos], [1, target_pos]
    kwargs = {"target_tokens": target} if enc_dec else {}
    out: dict[str, tuple[torch.Tensor, torch.Tensor | None]] = {}
    for name in ("causal", "bidirectional", "sliding"):
        allowed = masks[name].to(model.device)
        out[name] = masks[name], patterns_under_mask(model, tokens, allowed, stack, layer, **kwargs)[0]
    pattern_name = stage_name("pattern", layer, stack=stack)
    cross_name = stage_name("pattern", min(layer, cfg.decoder_layers - 1), stack="decoder", cross=True)
    padded = padded_run(model, tokens, shorter, [pattern_name] + ([cross_name] if enc_dec else []), target)
    out["padding"] = masks["padding"], padded[pattern_name]
    out["cross"] = masks["cross"], padded[cross_name] if enc_dec else None
    return out
