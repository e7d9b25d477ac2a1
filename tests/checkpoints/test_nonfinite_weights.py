"""Issue 40, failure 7: a GGUF with NaN weights was served, its attention patterns all 0.0 (rows summing to 0) while
its predictions looked plausible. A weight holding NaN or Inf is now refused at load, by name, in every format
(float32 at load, and stored in the file's precision); a NaN that arises in a pass is never turned into 0."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from checkpoints import CheckpointError, load_checkpoint, save_checkpoint
from checkpoints.file_precision import load_policy
from checkpoints.finite import nonfinite_weight
from model.config import TransformerConfig
from model.stored_weights import StoredWeight, has_stored_weights
from tests.app.conftest import tiny_models

gguf = pytest.importorskip("gguf")
pytest.importorskip("transformers")

from tests.checkpoints.gguf_files import tiny_hf, write_gguf  # noqa: E402


@pytest.mark.parametrize(("qtype", "stored"), [("F32", False), ("F16", False), ("F16", True), ("Q8_0", True)])
@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_a_gguf_with_a_non_finite_weight_is_refused_naming_it(tmp_path: Path, qtype: str, stored: bool,
                                                              bad: float) -> None:
    hf = tiny_hf("llama")
    with torch.no_grad():
        hf.model.layers[1].mlp.down_proj.weight[3, 5] = bad
    path = tmp_path / "bad.gguf"
    write_gguf(path, hf, "llama", gguf.GGMLQuantizationType[qtype])
    with load_policy(float32_budget=0 if stored else None), pytest.raises(CheckpointError) as refused:
        load_checkpoint(path)
    message = str(refused.value)
    assert "weight 'stack.blocks.1.mlp.W_out.weight'" in message, message
    if stored and qtype != "F32":
        assert "(blk.1.ffn_down.weight in the file)" in message
    assert "non-finite weights is not loaded" in message
    # the same file, finite, loads (both ways)
    hf.model.layers[1].mlp.down_proj.weight.data[3, 5] = 0.5
    write_gguf(path, hf, "llama", gguf.GGMLQuantizationType[qtype])
    with load_policy(float32_budget=0 if stored else None):
        assert has_stored_weights(load_checkpoint(path).model) == (stored and qtype != "F32")


def test_a_native_checkpoint_with_an_infinite_weight_is_refused(tmp_path: Path) -> None:
    loaded = tiny_models()["gpt"]
    with torch.no_grad():
        loaded.model.stack.blocks[0].attn.W_K.weight[0, 0] = -math.inf
        loaded.model.stack.blocks[0].attn.W_K.weight[1, 0] = math.nan
    save_checkpoint(tmp_path / "gpt", loaded.model, loaded.tokenizer, loaded.meta)
    with pytest.raises(CheckpointError, match=r"weight 'stack.blocks.0.attn.W_K.weight' holds 1 NaN and 1 infinite"):
        load_checkpoint(tmp_path / "gpt")


def test_the_finiteness_check_counts_exactly_even_when_a_finite_sum_overflows() -> None:
    big = torch.full((3, 4), 3e38)  # every value finite, the sum is +inf: the exact count says 0
    assert nonfinite_weight({"big": big}) is None
    big[2, 1] = math.nan
    assert "weight 'big' holds 1 NaN and 0 infinite" in str(nonfinite_weight({"big": big}))


def test_a_fully_masked_row_attends_nowhere_and_a_nan_stays_nan() -> None:
    """The only 0/0 turned into 0 is a query that may see no key (padding); an overflow's NaN is not hidden."""
    from model.transformer import Transformer

    cfg = TransformerConfig(architecture="encoder", vocab_size=16, d_model=16, n_layers=1, n_heads=2, n_ctx=8,
                            seed=0)
    model = Transformer(cfg).eval()
    allowed = torch.tensor([True, True, True, False])
    attn = model.stack.blocks[0].attn
    x = torch.randn(1, 4, 16)
    mask = allowed[None, None, None, :] & allowed[None, None, :, None]  # [1, 1, q, k]: the padded query sees nothing
    with torch.no_grad():
        out = attn(x, x, mask)
        assert torch.isfinite(out).all()  # the padded query's row is 0, not NaN
        attn.W_Q.weight.fill_(3e38)  # finite weights whose scores overflow: softmax(inf - inf) is NaN
        overflowed = attn(x, x, mask)
    assert torch.isnan(overflowed[0, :3]).any()  # not silently 0


def test_stored_weights_are_checked_chunk_by_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    from checkpoints import finite
    from checkpoints.file_precision import HalfSource

    weight = torch.zeros(64, 8, dtype=torch.float16)
    weight[40, 2] = math.inf
    monkeypatch.setattr(finite, "CHUNK_ELEMENTS", 8 * 16)  # 16 rows at a time: four reads
    read: list[int] = []
    source = HalfSource(weight)
    original = source.rows

    def rows(index: torch.Tensor | None) -> torch.Tensor:
        read.append(64 if index is None else len(index))
        return original(index)

    source.rows = rows  # type: ignore[method-assign]
    assert "holds 0 NaN and 1 infinite" in str(nonfinite_weight({"w": StoredWeight(source)}))
    assert read == [16, 16, 16, 16]
