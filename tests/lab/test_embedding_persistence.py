"""lab/embedding_persistence.py: each stream's cosine with its token's own embedding and with the last stream."""

from __future__ import annotations

import pytest
import torch

from lab.embedding_persistence import embedding_persistence
from model.config import TransformerConfig
from model.transformer import Transformer

IDS = [5, 9, 2, 7, 7, 1, 3]


def make(**changes: object) -> Transformer:
    base: dict[str, object] = dict(vocab_size=40, d_model=32, n_layers=3, n_heads=4, n_ctx=32, seed=5, init_std=0.3)
    return Transformer(TransformerConfig(**{**base, **changes})).eval()  # type: ignore[arg-type]


def cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(a @ b / (a.norm() * b.norm()))


@pytest.mark.parametrize("changes", [{"pos_encoding": "rope", "norm": "rmsnorm"}, {"pos_encoding": "alibi"},
                                     {"pos_encoding": "none"}], ids=["rope", "alibi", "nope"])
def test_a_stack_that_adds_nothing_starts_from_the_embedding_itself(changes: dict[str, object]) -> None:
    model = make(**changes)
    _, trace = model.run_with_trace(torch.tensor([IDS]))  # type: ignore[arg-type]
    kept = embedding_persistence(model, trace, stack=None)
    assert kept.added == [] and kept.streams == ["input", "0", "1", "2"]
    assert torch.allclose(kept.to_embedding[0], torch.ones(len(IDS)), atol=1e-6)
    assert torch.allclose(kept.norm_ratio[0], torch.ones(len(IDS)), atol=1e-5)  # the input is the embedding
    # the last stream is the final stream: its cosine with itself is 1
    assert torch.allclose(kept.to_final[-1], torch.ones(len(IDS)), atol=1e-6)


def test_added_positions_turn_the_input_away_from_the_embedding() -> None:
    model = make(pos_encoding="sinusoidal")
    _, trace = model.run_with_trace(torch.tensor([IDS]))  # type: ignore[arg-type]
    kept = embedding_persistence(model, trace, stack=None)
    assert kept.added == ["positions"]
    assert float(kept.to_embedding[0].max()) < 1 - 1e-3  # the sinusoid is no multiple of any token's vector
    expected = [cosine(trace["blocks.0.hook_resid_pre"][0, p], trace["hook_embed"][0, p]) for p in range(len(IDS))]
    assert torch.allclose(kept.to_embedding[0], torch.tensor(expected), atol=1e-5)


@pytest.mark.parametrize("changes", [{}, {"pos_encoding": "rope", "norm": "rmsnorm"}, {"norm_placement": "post"}],
                         ids=["sinusoidal", "rope-rmsnorm", "post-ln"])
def test_every_cosine_is_the_direct_one_from_the_trace_and_within_minus_one_and_one(changes: dict[str, object]) -> None:
    model = make(**changes)
    _, trace = model.run_with_trace(torch.tensor([IDS]))  # type: ignore[arg-type]
    kept = embedding_persistence(model, trace, stack=None)
    assert tuple(kept.to_embedding.shape) == tuple(kept.to_final.shape) == (4, len(IDS))  # [stream, pos]
    assert float(kept.to_embedding.abs().max()) <= 1 + 1e-6 and float(kept.to_final.abs().max()) <= 1 + 1e-6
    embed, final = trace["hook_embed"][0], trace["blocks.2.hook_resid_post"][0]
    for layer in range(3):
        stream = trace[f"blocks.{layer}.hook_resid_post"][0]
        for p in range(len(IDS)):
            assert abs(float(kept.to_embedding[layer + 1, p]) - cosine(stream[p], embed[p])) < 1e-5
            assert abs(float(kept.to_final[layer + 1, p]) - cosine(stream[p], final[p])) < 1e-5
    assert torch.allclose(kept.mean_to_embedding, kept.to_embedding.mean(-1))
    ratio = trace["blocks.1.hook_resid_post"][0].norm(dim=-1) / embed.norm(dim=-1)  # [pos]
    assert torch.allclose(kept.norm_ratio[2], ratio, rtol=1e-5)


def test_a_bert_like_encoder_names_what_it_adds_before_block_0() -> None:
    model = make(architecture="encoder", pos_encoding="learned", n_token_types=2, embed_norm=True,
                 norm_placement="post")
    _, trace = model.run_with_trace(torch.tensor([IDS]))  # type: ignore[arg-type]
    assert embedding_persistence(model, trace, stack=None).added == ["positions", "segments", "norm"]


@pytest.mark.parametrize("stack", ["encoder", "decoder"])
def test_an_encoder_decoder_is_read_one_stack_at_a_time(stack: str) -> None:
    model = make(architecture="encoder-decoder", pos_encoding="rope")
    target = [1, 4, 2]
    _, trace = model.run_with_trace(torch.tensor([IDS]), target_tokens=torch.tensor([target]))  # type: ignore[arg-type]
    kept = embedding_persistence(model, trace, stack=stack)
    n = len(IDS) if stack == "encoder" else len(target)
    assert kept.to_embedding.shape[1] == n
    assert torch.allclose(kept.to_embedding[0], torch.ones(n), atol=1e-6)
    embed = trace[f"{stack}.hook_embed"][0]
    last = trace[f"{stack}.blocks.{len(kept.streams) - 2}.hook_resid_post"][0]
    assert abs(float(kept.to_embedding[-1, 0]) - cosine(last[0], embed[0])) < 1e-5
