"""The lab on a tiny model with Gemma 4's fields (per-layer inputs, K/V shared across layers, K = V, global heads of
their own, v norm, layer scalars): what runs the forward pass itself is exact (logit lens, activation patching,
decoding with the KV cache, whose size the KV-cache panel counts layer by layer); what redoes the model's math
outside it refuses, naming the features it leaves out."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from analysis.lens import logit_lens
from app.errors import ApiError
from app.lab.common import refuse_unreproduced
from lab.activation_patching import Patch, logit_diffs
from lab.kv_cache_size import cache_bytes, shape_of, variants
from lab.parameters import attention_counts, parameter_report
from lab.reproduced import not_reproduced
from model.config import TransformerConfig
from model.kv_cache import KVCache
from model.transformer import Transformer, distinct_parameters

TOKENS = torch.arange(3, 15)[None]  # [1, 12]: longer than the window (3)
GEMMA4 = dict(vocab_size=40, d_model=32, n_layers=6, n_heads=4, n_kv_heads=2, head_dim=8, n_ctx=64, seed=5,
              init_std=0.3, pos_encoding="rope", norm="rmsnorm", activation="geglu_tanh", bias=False,
              post_norms=True, qk_norm=True, score_scale_dim=1.0, scale_embeddings=True, sliding_window=3,
              window_layers=(0, 2, 4), rope_base=1000.0, rope_base_local=50.0, head_dim_global=16,
              kv_heads_global=1, kv_source=(0, 1, 2, 3, 2, 3), k_eq_v=True, v_norm=True,
              mlp_widths=(64, 64, 64, 64, 128, 128), per_layer_input=8, layer_scalar=True, logit_softcap=3.0)


def gemma4() -> Transformer:
    model = Transformer(TransformerConfig(**GEMMA4)).eval()
    with torch.no_grad():  # layer scalars away from 1, so that leaving one out shows
        for index, block in enumerate(model.stack.blocks):
            block.layer_scalar.fill_(0.6 + 0.2 * index)
    return model


def test_the_logit_lens_after_the_last_layer_is_the_models_output() -> None:
    model = gemma4()
    logits, trace = model.run_with_trace(TOKENS)
    lens = logit_lens(model, trace)
    assert (lens.logits[-1] - logits[0]).abs().max().item() < 1e-5


def test_patching_is_refused_with_per_layer_inputs_and_exact_without() -> None:
    """Activation patching runs the forward pass with edits, so shared K/V come with it; but every block also reads
    the (corrupted) tokens' per-layer input, so the whole clean stream at layer 0 does not restore the clean run:
    refused, by name."""
    clean, corrupted = TOKENS[0].tolist(), [7] + TOKENS[0, 1:].tolist()
    rows = [[Patch("resid_pre", 0)], [Patch("resid_post", 5)]]
    with pytest.raises(ValueError, match="per-layer input embedding of the tokens themselves"):
        logit_diffs(gemma4(), clean, corrupted, (5, 9), rows)
    model = Transformer(TransformerConfig(**{**GEMMA4, "per_layer_input": None})).eval()
    diffs, clean_diff, _ = logit_diffs(model, clean, corrupted, (5, 9), rows)
    assert abs(diffs[0] - clean_diff) < 1e-4 and abs(diffs[1] - clean_diff) < 1e-4


def test_the_kv_cache_size_counts_the_layers_that_store_k_and_v() -> None:
    """Decoding fills the cache of layers 0-3 only (4 and 5 attend with 2's and 3's), local heads 2 × 8 wide and
    global ones 1 × 16: the panel's bytes equal the cache's own, position by position."""
    model = gemma4()
    cache = KVCache()
    with torch.inference_mode():
        for i in range(TOKENS.shape[1]):
            model(TOKENS[:, i : i + 1], cache=cache)
    shape = shape_of("tiny-gemma4", model.cfg)
    assert shape.layers == 4 and shape.layer_kv == ((2, 8, True), (1, 16, False), (2, 8, True), (1, 16, False))
    # the model's cache keeps every position (it does not drop what the window no longer sees): compare with no window
    unwindowed = type(shape)(**{**shape.__dict__, "sliding_window": None, "local_layers": None})
    assert cache_bytes(unwindowed, context=12, dtype="float32") == cache.nbytes()
    assert cache_bytes(shape, context=12, dtype="float32") == 4 * (2 * 2 * 8 * 3 + 2 * 1 * 16 * 12) * 2
    assert cache_bytes(variants(shape)["MQA"], context=12, dtype="float32") < cache_bytes(shape, context=12,
                                                                                         dtype="float32")


def test_parameters_are_counted_once_each_with_the_per_layer_inputs_apart() -> None:
    model = gemma4()
    report = parameter_report(model)
    counts = report["counts"]
    assert counts["total"] == sum(p.numel() for _, p in distinct_parameters(model)) == report["state_dict_total"]
    assert counts["per_layer_inputs"] == 40 * 6 * 8 + 32 * 6 * 8 + 8 + 6 * (32 * 8 + 8 * 32 + 32)
    assert attention_counts(model.cfg, 4, 2)["total"] == 32 * 32 + 2 * 32 * 16 + 32 * 32  # a local layer's


@pytest.mark.parametrize("experiment", ["Head ablation", "Logit attribution", "The FlashAttention comparison"])
def test_what_redoes_the_math_outside_the_pass_is_refused_by_name(experiment: str) -> None:
    model = gemma4()
    missing = not_reproduced(model.cfg)
    assert len(missing) == 6 and "layers 4, 5 attend with those of layers 2, 3" in missing[1]
    with pytest.raises(ApiError) as refused:
        refuse_unreproduced(SimpleNamespace(name="tiny-gemma4", cfg=model.cfg), experiment)  # type: ignore[arg-type]
    assert refused.value.status == 422 and experiment in str(refused.value) and "per-layer input" in str(refused.value)
    plain = Transformer(TransformerConfig(vocab_size=40, d_model=32, n_layers=2, n_heads=4))
    refuse_unreproduced(SimpleNamespace(name="plain", cfg=plain.cfg), experiment)  # type: ignore[arg-type]


def test_a_pass_resumed_inside_the_sharing_layers_is_refused() -> None:
    cfg = TransformerConfig(**{**GEMMA4, "per_layer_input": None})
    model = Transformer(cfg).eval()
    with pytest.raises(ValueError, match="K and V of earlier layers"):
        model.logits_from(torch.zeros(1, 3, 32), 4)
    _, trace = model.run_with_trace(TOKENS[:, :3])  # from block 0 (or past the last source) it is the full pass
    resumed = model.logits_from(trace["blocks.0.hook_resid_pre"], 0)
    assert (resumed - model(TOKENS[:, :3])).abs().max().item() < 1e-5
