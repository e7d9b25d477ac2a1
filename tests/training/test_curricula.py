"""The copying curricula build the rows they promise."""

from __future__ import annotations

import numpy as np

from training.language_modelling import Batcher

BOS = 9999


def _batcher(**fractions: float) -> Batcher:
    stream = np.arange(5000)  # every token is its own position: copies are easy to see
    return Batcher({"en": stream, "zh": stream}, 32, 8, BOS, 100, 0.3, 0.0, 0.0, 0, **fractions)


def test_echo_row_reads_a_natural_span_again_then_goes_on():
    batcher = _batcher(echo_frac=1.0)
    for _ in range(50):
        row = batcher.echo_row()
        assert row[0] == BOS and len(row) == 32
        text = row[1:]
        # the first place the text stops counting up is where the span starts again
        breaks = np.flatnonzero(np.diff(text) != 1)
        assert len(breaks) >= 1
        length = breaks[0] + 1
        assert 4 <= length < 16
        span = text[:length]
        for start in range(length, len(text) - length + 1, length):
            chunk = text[start : start + length]
            if not np.array_equal(chunk, span):  # past the copies: the text that followed the span
                assert np.array_equal(chunk, np.arange(chunk[0], chunk[0] + len(chunk)))
                break


def test_echo_rows_are_scored_everywhere():
    inputs, targets = _batcher(echo_frac=1.0).next()
    assert (targets != -100).all()
    assert np.array_equal(inputs[:, 1:].numpy(), targets[:, :-1].numpy())
