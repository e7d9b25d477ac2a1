"""analysis.readouts.prediction: the table is ranked by logit, so a very low temperature (every
probability but the first rounds to 0) still lists the next most likely tokens, not arbitrary ones."""

from __future__ import annotations

import torch

from analysis.readouts import prediction


def test_low_temperature_keeps_the_logit_order() -> None:
    torch.manual_seed(0)
    logits = torch.randn(5000) * 3
    expected = torch.argsort(logits, descending=True)[:5].tolist()
    for temperature in (1.0, 0.05, 1e-4):
        table = prediction(logits, temperature, 5)
        assert table["ids"] == expected, temperature
        probs = table["probs"]
        assert isinstance(probs, list) and probs == sorted(probs, reverse=True)
    cold = prediction(logits, 1e-4, 5)
    assert cold["probs"][0] == 1.0 and cold["probs"][1:] == [0.0] * 4  # the ties that used to be arbitrary


def test_rest_and_logits_match() -> None:
    logits = torch.tensor([2.0, 1.0, 0.5, -1.0])
    table = prediction(logits, 1.0, 2)
    probs = torch.softmax(logits, -1)
    assert table["ids"] == [0, 1]
    assert abs(sum(table["probs"]) + table["rest"] - 1.0) < 1e-6  # type: ignore[arg-type]
    assert table["logits"] == [2.0, 1.0]
    assert abs(table["probs"][1] - float(probs[1])) < 1e-7  # type: ignore[index]
