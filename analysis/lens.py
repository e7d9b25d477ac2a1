"""Logit lens (nostalgebraist 2020): what the model would predict if it stopped after each block.

Read the residual stream after every block as if it were the last one, through the final norm
and the unembedding:

    logits_L = W_U · ln_final(resid_post_L)          [pos, d_vocab] for every layer L

(then cap · tanh(logits_L / cap) where the model soft-caps its logits, Gemma 2).

After the last block this is exactly the model's own output.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

from model.hooks import stage_name
from model.layers import soft_cap
from model.transformer import Transformer


def lm_stack(model: Transformer) -> str | None:
    """The stack whose output the unembedding reads, as stage names spell it: an encoder-decoder's decoder."""
    if not model.cfg.lm_head:
        raise ValueError("the logit lens needs a model with an unembedding (lm_head)")
    return "decoder" if model.cfg.architecture == "encoder-decoder" else None


# ---------------------------------------------------------------- logit lens


@dataclass(frozen=True)
class LogitLens:
    layers: list[str]  # "embed", then "0", "1", ...: after which block the residual is read
    stages: list[str]  # the trace stage read for each layer
    logits: torch.Tensor  # [layer, pos, d_vocab]
    top_ids: torch.Tensor  # [layer, pos, k], most likely first
    top_probs: torch.Tensor  # [layer, pos, k]
    next_token_probs: torch.Tensor | None  # [layer, pos - 1]: probability of the token that does come next


def lens_stage_names(model: Transformer) -> list[str]:
    """The residual stream before block 0 (the embeddings) and after every block."""
    stack = lm_stack(model)
    n_layers = len(model.stack_named(stack).blocks)
    return [stage_name("resid_pre", 0, stack=stack)] + [
        stage_name("resid_post", i, stack=stack) for i in range(n_layers)
    ]


@torch.inference_mode()
def logit_lens(
    model: Transformer, trace: Mapping[str, torch.Tensor], *, k: int = 5, ids: Sequence[int] | None = None
) -> LogitLens:
    """Top-k next tokens after every block at every position (batch row 0 of the trace).

    ids: the tokens the stack read (the decoder input for encoder-decoders), to report the
    probability each layer gives the token that actually follows.
    """
    stack = model.stack_named(lm_stack(model))
    stages = lens_stage_names(model)
    resid = torch.stack([trace[name][0] for name in stages])  # [layer, pos, d_model]
    normed = stack.ln_final(resid) if model.cfg.final_norm else resid
    logits = model.W_U(normed).float()  # [layer, pos, d_vocab]
    if model.cfg.logit_softcap is not None:  # Gemma 2 caps its logits: the lens reads them as the model does
        logits = soft_cap(logits, model.cfg.logit_softcap)
    probs = torch.softmax(logits, dim=-1)
    k = max(1, min(k, probs.shape[-1]))
    top_probs, top_ids = probs.topk(k, dim=-1)  # [layer, pos, k]
    following = None
    if ids is not None and len(ids) >= 2:
        nxt = torch.tensor(list(ids[1:]), device=probs.device)  # [pos - 1]
        following = probs[:, :-1].gather(-1, nxt[None, :, None].expand(len(stages), -1, 1))[..., 0]
    labels = ["embed"] + [str(i) for i in range(len(stages) - 1)]
    return LogitLens(labels, stages, logits, top_ids, top_probs, following)


def run_logit_lens(
    model: Transformer, tokens: torch.Tensor, *, k: int = 5, target_tokens: torch.Tensor | None = None
) -> tuple[LogitLens, torch.Tensor]:
    """Trace tokens [1, pos] (the source, with target_tokens, for encoder-decoders) -> (lens, logits [pos, d_vocab])."""
    enc_dec = model.cfg.architecture == "encoder-decoder"
    read = target_tokens if enc_dec else tokens
    if read is None:
        raise ValueError("an encoder-decoder model's logit lens reads the decoder: pass target_tokens")
    logits, trace = model.run_with_trace(
        tokens, lens_stage_names(model), target_tokens=target_tokens if enc_dec else None
    )
    return logit_lens(model, trace, k=k, ids=read[0].tolist()), logits[0]
