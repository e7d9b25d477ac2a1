"""The results' arrays: both of the API's tensor encodings decoded, dimensions by name, tables as DataFrames."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from app.tensors import encode_tensor
from transformer_explorer.results import Tensor, decode


def test_base64_is_decoded_to_the_same_float32_bits_and_lists_to_floats() -> None:
    values = torch.tensor([[1.0, float("-inf")], [0.1 + 1e-7, 3e-8]])  # -inf: a masked cell
    exact = Tensor.from_answer(encode_tensor("attn_scores", values, ["q_pos", "k_pos"], encoding="base64"))
    assert exact.values.dtype == np.float32 and exact.dims == ("q_pos", "k_pos")
    assert exact.values[0, 0] == 1.0 and np.isnan(exact.values[0, 1])
    assert exact.values[1].tobytes() == values[1].numpy().tobytes()  # bit for bit
    rounded = Tensor.from_answer(encode_tensor("attn_scores", values, ["q_pos", "k_pos"]))
    assert rounded.values.dtype == np.float64 and np.isnan(rounded.values[0, 1])
    assert rounded.values[1, 0] == pytest.approx(0.1, rel=1e-3)  # 4 significant digits


def test_dimensions_are_chosen_by_name() -> None:
    tensor = Tensor("pattern", ("head", "q_pos", "k_pos"), np.arange(12.0).reshape(2, 2, 3))
    np.testing.assert_array_equal(tensor.sel(head=1), np.arange(6.0, 12.0).reshape(2, 3))
    assert tensor.sel(head=0, q_pos=1).tolist() == [3.0, 4.0, 5.0]
    with pytest.raises(KeyError, match="layer"):
        tensor.sel(layer=0)
    with pytest.raises(ValueError, match="sel"):
        tensor.to_pandas()


def test_tables_become_dataframes() -> None:
    pytest.importorskip("pandas")
    answer = {"model": "m", "tokens": [{"id": 1, "text": "a", "start": 0, "end": 1}], "temperature": 1.0,
              "top_k": [{"id": 7, "text": " b", "prob": 0.75, "logit": 2.0}], "rest_prob": 0.25,
              "generated": {"text": " b", "tokens": [], "seed": 0}}
    table = decode("predict", answer).to_pandas()  # type: ignore[attr-defined]
    assert list(table.columns) == ["id", "text", "prob", "logit"] and table["prob"].tolist() == [0.75]
    tokens = decode("tokenize", {"model": "m", "tokens": answer["tokens"]}).to_pandas()  # type: ignore[attr-defined]
    assert tokens["text"].tolist() == ["a"]
