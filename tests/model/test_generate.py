"""The one decoding loop: greedy is argmax, sampling is seeded, and the stops hold."""

from __future__ import annotations

import pytest
import torch

from model import Transformer, TransformerConfig
from model.generate import decode, generate, generate_greedy_batch, sampling_distributions, seeded_draws

VOCAB = 40


def make(architecture: str = "decoder", n_ctx: int = 32) -> Transformer:
    cfg = TransformerConfig(architecture=architecture, vocab_size=VOCAB, d_model=32, n_layers=1, n_ctx=n_ctx, seed=1)
    return Transformer(cfg).eval()


def argmax_loop(model: Transformer, ids: list[int], n: int) -> list[int]:
    ids = list(ids)
    new: list[int] = []
    with torch.no_grad():
        for _ in range(n):
            token = int(model(torch.tensor([ids]))[0, -1].argmax())
            new.append(token)
            ids.append(token)
    return new


def test_greedy_is_the_argmax_loop() -> None:
    model = make()
    assert generate(model, [3, 4, 5], max_new_tokens=8, temperature=0.0) == argmax_loop(model, [3, 4, 5], 8)


def test_seeded_sampling_is_reproducible_and_seeds_differ() -> None:
    model = make()

    def draw(seed: int) -> list[int]:
        return generate(model, [1, 2], max_new_tokens=12, temperature=1.5, top_k=20, seed=seed)

    assert draw(7) == draw(7)
    assert len({tuple(draw(seed)) for seed in range(6)}) > 1


def test_sampling_draws_from_the_top_k_as_specified() -> None:
    """The first token is the one sampler's draw: seeded_draws(sampling_distributions(...)["final"], 1, seed)."""
    model = make()
    ids = [5, 6, 7]
    with torch.no_grad():
        logits = model(torch.tensor([ids]))[0, -1].float()  # [d_vocab]
    for top_k, top_p, seed in ((3, None, 11), (None, 0.5, 4), (10, 0.9, 7)):
        final = sampling_distributions(logits, 0.8, top_k, top_p)["final"]  # [d_vocab]
        expected = seeded_draws(final, 1, seed)
        assert generate(model, ids, max_new_tokens=1, temperature=0.8, top_k=top_k, top_p=top_p, seed=seed) == expected
        assert final[expected[0]] > 0
    assert set(generate(model, ids, max_new_tokens=1, temperature=5.0, top_k=1, seed=3)) == {int(logits.argmax())}


def test_encoder_decoder_extends_the_target_and_keeps_the_source() -> None:
    model = make("encoder-decoder")
    source, target = [3, 4, 5, 6], [1]
    new = generate(model, source, target_ids=target, max_new_tokens=5, temperature=0.0)
    expected: list[int] = []
    growing = list(target)
    with torch.no_grad():
        for _ in range(5):
            logits = model(torch.tensor([source]), target_tokens=torch.tensor([growing]))  # [1, pos, d_vocab]
            expected.append(int(logits[0, -1].argmax()))
            growing.append(expected[-1])
    assert new == expected
    with pytest.raises(ValueError):
        generate(model, source, max_new_tokens=1)


def test_stop_id_is_not_appended() -> None:
    model = make()
    free = generate(model, [2, 3], max_new_tokens=6, temperature=0.0)
    stop = free[2]
    cut = generate(model, [2, 3], max_new_tokens=6, temperature=0.0, stop_id=stop)
    assert cut == free[: free.index(stop)]


def test_max_len_caps_the_growing_sequence() -> None:
    model = make(n_ctx=8)
    assert len(generate(model, [1, 2, 3], max_new_tokens=20, temperature=0.0, max_len=6)) == 3
    assert len(generate(model, [1, 2, 3], max_new_tokens=20, temperature=0.0)) == 5  # cfg.n_ctx by default
    enc_dec = make("encoder-decoder", n_ctx=8)
    new = generate(enc_dec, [1, 2, 3, 4, 5, 6], target_ids=[1], max_new_tokens=20, temperature=0.0, max_len=4)
    assert len(new) == 3  # the target grows to max_len; the source's length does not count


def test_batched_greedy_matches_one_at_a_time() -> None:
    model = make("encoder-decoder")
    start, stop, pad = 1, 2, 0
    sources = [[5, 6, 7], [8, 9], [10, 11, 12, 13]]
    batched = generate_greedy_batch(model, sources, start_id=start, stop_id=stop, pad_id=pad, max_new_tokens=6)
    for source, row in zip(sources, batched, strict=True):
        single = generate(model, source, target_ids=[start], max_new_tokens=6, temperature=0.0, stop_id=stop)
        assert row == [i for i in single if i != pad]


@pytest.mark.parametrize("use_cache", [True, False])
def test_one_loop_for_a_batch_and_for_one_row(use_cache: bool) -> None:
    """decode() on a batch: each row as generate() decodes it alone, a row stopping at its own step."""
    model = make()
    rows = [[2, 3], [4, 5], [6, 7]]
    stop = generate(model, rows[0], max_new_tokens=8, temperature=0.0)[2]  # row 0 stops after two tokens
    batched = decode(model, torch.tensor(rows), max_new_tokens=8, temperature=0.0, stop_id=stop, pad_id=0,
                     use_cache=use_cache)
    singles = [generate(model, row, max_new_tokens=8, temperature=0.0, stop_id=stop) for row in rows]
    assert batched == singles
    assert len(singles[0]) == 2


def test_encoders_do_not_generate() -> None:
    with pytest.raises(ValueError):
        generate(make("encoder"), [1, 2], max_new_tokens=1)
