"""The experiments and analyses that redo part of the forward pass, on tiny models with SmolLM3's NoPE layers and
Qwen3-MoE's mixture of experts (built from the config; the loaders' parity is tests/checkpoints/test_smollm3.py and
test_qwen3_moe.py): each recomputed number equals the model's own, or what is not followed is refused by name."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from analysis.lens import logit_lens
from lab import quantization as quant
from lab.attention_flow import attention_flow
from lab.cached_decoding import cached_decoding
from lab.flash import differences, flash_for_head
from lab.linear_attention import linear_attention_for_head
from lab.logit_attribution import logit_attribution
from lab.parameters import attention_counts, parameter_report
from model.config import TransformerConfig
from model.hooks import stage_name
from model.transformer import Transformer

LLAMA: dict[str, Any] = {"pos_encoding": "rope", "norm": "rmsnorm", "activation": "swiglu", "bias": False,
                         "n_kv_heads": 2, "vocab_size": 40, "d_model": 32, "n_layers": 3, "n_heads": 4, "n_ctx": 64,
                         "seed": 5, "init_std": 0.3}
MODELS: dict[str, dict[str, Any]] = {
    "nope": {"nope_layers": (0, 2)},  # SmolLM3: layers 0 and 2 without RoPE
    # Qwen3-MoE: 6 experts of 16, 2 chosen and renormalised, layer 1 a plain FFN
    "moe": {"qk_norm": True, "n_experts": 6, "n_experts_used": 2, "expert_d_mlp": 16, "moe_layers": (0, 2),
            "expert_norm_topk": True},
    # the same with Qwen3.5-MoE's shared expert (24 wide) beside the routed ones: its part is in the traced output
    "moe_shared": {"qk_norm": True, "n_experts": 6, "n_experts_used": 2, "expert_d_mlp": 16, "moe_layers": (0, 2),
                   "expert_norm_topk": True, "shared_expert_d_mlp": 24},
}
TOKENS = torch.arange(3, 15)[None]  # [1, 12]


def traced(name: str) -> tuple[Transformer, torch.Tensor, Any]:
    model = Transformer(TransformerConfig(**LLAMA, **MODELS[name])).eval()
    logits, trace = model.run_with_trace(TOKENS)
    return model, logits, trace


def test_a_nope_layer_records_no_rotation_and_ignores_positions() -> None:
    model, _, trace = traced("nope")
    assert stage_name("rot_q", 1) in trace and stage_name("rot_q", 0) not in trace
    # without positions, layer 0's scores of a query against the same token at two places are equal
    _, twice = model.run_with_trace(torch.tensor([[5, 9, 5, 5]]))
    raw = twice[stage_name("scores_raw", 0)][0]  # [head, q_pos, k_pos], before the mask
    torch.testing.assert_close(raw[:, 3, 0], raw[:, 3, 2])
    turned = twice[stage_name("scores_raw", 1)][0]  # a RoPE layer tells them apart
    assert float((turned[:, 3, 0] - turned[:, 3, 2]).abs().max()) > 1e-3


@pytest.mark.parametrize("name", list(MODELS))
def test_flash_and_linear_attention_recompute_every_layer(name: str) -> None:
    model, _, trace = traced(name)
    for layer in range(3):  # in "nope", layers 0 and 2 read q and k unturned
        result, inputs = flash_for_head(model, TOKENS, layer, 1, block_q=3, block_k=2)
        to_z, to_naive = differences(result, inputs)
        assert to_z < 1e-5 and to_naive < 1e-5, (layer, to_z, to_naive)
        linear = linear_attention_for_head(model, trace, layer, 1)
        assert linear.max_diff_pattern < 1e-5 and linear.max_diff_z < 1e-5


@pytest.mark.parametrize("name", list(MODELS))
def test_attribution_flow_and_lens_add_up(name: str) -> None:
    """Logit attribution through a mixture of experts: its part is the layer's traced output (the routing the run
    chose), so the parts still add up to the logit."""
    model, logits, trace = traced(name)
    for position in (0, 11):
        split = logit_attribution(model, trace, logits, position=position, target=7, versus=11, top=2)
        assert abs(split.total - split.logit) < 1e-4 * max(1.0, abs(split.logit)), (split.total, split.logit)
    for layer in range(3):
        flow = attention_flow(model, trace, layer=layer, head=1)
        assert flow.identity_error <= 1e-5 * max(1.0, flow.output_scale)
    assert float((logit_lens(model, trace).logits[-1] - logits[0]).abs().max()) < 1e-5


@pytest.mark.parametrize("name", list(MODELS))
def test_cached_decoding_equals_full_passes(name: str) -> None:
    """Each new token routed (or unturned) alone, with the cache, gives the full pass's logits."""
    model, _, _ = traced(name)
    result = cached_decoding(model, name, TOKENS[0].tolist(), None, max_new_tokens=4)
    assert max(step["max_diff"] for step in result.steps) < 1e-4


def test_quantization_refuses_experts_by_name() -> None:
    model, _, _ = traced("moe")
    with pytest.raises(quant.NotEmulated, match="routes each token to a few experts"):
        quant.check_emulated(model)


def test_active_parameters_count_the_chosen_experts_only() -> None:
    model, _, _ = traced("moe")
    counts = parameter_report(model)["counts"]
    expert = 3 * 32 * 16  # W_gate, W_in, W_out of one expert
    assert counts["active"] == counts["total"] - 2 * (6 - 2) * expert  # two MoE layers, 4 experts idle in each
    assert "active" not in parameter_report(traced("nope")[0])["counts"]
    assert attention_counts(traced("nope")[0].cfg, 4)["total"] == 4 * 32 * 32  # NoPE layers have no positions
