"""Is the embedding still there? How much of each token's own input embedding each layer's stream keeps.

The residual stream is a sum: what a block writes is added to what it read (x + Attn(·) + FFN(·)),
so the token's embedding W_E[t] is never overwritten, only joined. At every stream of one stack
(the stack's input, block 0's resid_pre, then every block's resid_post) and every position, this
measures

    cos(x_L[i], e[i]) = x_L[i] · e[i] / (‖x_L[i]‖ ‖e[i]‖)        e[i]: hook_embed, the token's embedding

and, to see where the stream is heading, its cosine with the stack's last stream (the last block's
resid_post, before any final norm). Beside them, ‖x_L[i]‖ / ‖e[i]‖: a cosine falls both when the
embedding's direction is lost and when the stream grows around it (SmolLM2's block 0 writes a
vector some 20 times longer than its embeddings), and the ratio tells the two apart.

e[i] is the token's embedding before anything else is added: W_E[t] (× √d_model where the model
scales it, which leaves a cosine unchanged), without the positions an embedding kind adds, BERT's
segment vector or an embedding norm. Where the model adds none of these (RoPE, ALiBi, NoPE models
without an embedding norm) the stack's input is e itself, so its cosine is 1 at every position.

One stack at a time: a decoder's or an encoder's only stack, an encoder-decoder's encoder or decoder
(the decoder's stream starts from its own embedding of the target tokens).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from model.hooks import stage_name
from model.transformer import Transformer


@dataclass(frozen=True)
class EmbeddingPersistence:
    streams: list[str]  # "input" (block 0's resid_pre), then "0", "1", ... (block L's resid_post)
    to_embedding: torch.Tensor  # [stream, pos] cos(stream, the token's own embedding)
    to_final: torch.Tensor  # [stream, pos] cos(stream, the last block's resid_post)
    norm_ratio: torch.Tensor  # [stream, pos] ‖stream‖ / ‖the token's embedding‖
    added: list[str]  # what the stack adds to the embedding before block 0: "positions", "segments", "norm"

    @property
    def mean_to_embedding(self) -> torch.Tensor:  # [stream] over positions
        return self.to_embedding.mean(-1)

    @property
    def mean_norm_ratio(self) -> torch.Tensor:  # [stream]
        return self.norm_ratio.mean(-1)

    @property
    def mean_to_final(self) -> torch.Tensor:  # [stream]
        return self.to_final.mean(-1)


def stream_names(n_layers: int, stack: str | None) -> list[str]:
    """The trace names of one stack's streams: its input (block 0's resid_pre), then every block's output."""
    return [stage_name("resid_pre", 0, stack=stack)] + [stage_name("resid_post", L, stack=stack)
                                                         for L in range(n_layers)]


def embedding_persistence(model: Transformer, trace: Mapping[str, torch.Tensor], *,
                          stack: str | None) -> EmbeddingPersistence:
    """Cosines of every stream of `stack` (None: the model's one stack) with the token embedding and the last
    stream, read from a full trace of batch 1."""
    embed_module = model.stack_named(stack).embed
    n_layers = len(model.stack_named(stack).blocks)
    embedding = trace[stage_name("embed", stack=stack)][0].float()  # [pos, d_model]
    streams = torch.stack([trace[name][0].float() for name in stream_names(n_layers, stack)])  # [stream, pos, d_model]
    final = streams[-1]  # [pos, d_model]
    added = [what for what, present in (("positions", embed_module.adds_positions),
                                        ("segments", hasattr(embed_module, "W_token_type")),
                                        ("norm", hasattr(embed_module, "ln_embed"))) if present]
    return EmbeddingPersistence(
        streams=["input"] + [str(L) for L in range(n_layers)],
        to_embedding=F.cosine_similarity(streams, embedding[None], dim=-1),  # [stream, pos]
        to_final=F.cosine_similarity(streams, final[None], dim=-1),
        norm_ratio=streams.norm(dim=-1) / embedding.norm(dim=-1).clamp_min(1e-12),  # [stream, pos]
        added=added,
    )
