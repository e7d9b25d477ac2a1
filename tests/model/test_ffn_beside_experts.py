"""Gemma 4's mixture-of-experts block (model/moe.py FfnBesideExperts): its two summands are stages,
`mlp.hook_dense_out` (the dense FFN's output after norm_1) and `mlp.hook_experts_out` (the experts' weighted sum
after norm_2), and so are what the router and the experts read of the stream (`mlp.hook_router_in`,
`mlp.hook_experts_in`). On a tiny random model whose norm gains and expert scales are away from 1: each summand is
what the recorded stages before it give, the norm after the FFN of their sum is the traced mlp_out, and these stages
are on the block's MoE layers only (not on its dense layers, nor on a Qwen3-MoE or Qwen3.5-MoE layer)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from model import Transformer, TransformerConfig
from model.hooks import Trace
from model.moe import FfnBesideExperts, rms, routed

TOL = 1e-5
SUMMANDS = ("dense_out", "experts_out")
OWN = (*SUMMANDS, "router_in", "experts_in")  # the stages only this block has: its summands and its two inputs


def gemma_moe(**changes: Any) -> Transformer:
    fields: dict[str, Any] = dict(
        vocab_size=40, d_model=32, n_layers=3, n_heads=4, n_ctx=64, seed=3, init_std=0.3, pos_encoding="rope",
        norm="rmsnorm", activation="geglu_tanh", bias=False, post_norms=True, n_experts=4, n_experts_used=2,
        expert_d_mlp=16, expert_norm_topk=True, experts_beside_mlp=True)
    cfg = TransformerConfig(**{**fields, **changes})
    return scales_away_from_one(Transformer(cfg).eval())


def scales_away_from_one(model: Transformer, seed: int = 0) -> Transformer:
    """The block's norm gains and router/expert scales drawn from [0.5, 1.5) (at init all 1, so that a summand before
    its norm would pass a test, and every token's summands would have the same length, √d_model)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith(("norm_dense_w", "norm_experts_in_w", "norm_experts_out_w", "per_expert_scale",
                              "router_scale")):
                param.copy_(0.5 + torch.rand(param.shape, generator=gen))
    return model


def post_norm(block: torch.nn.Module) -> torch.nn.Module:
    """The block's norm after the FFN (Gemma's ln2_post)."""
    norm = block.ln2_post
    assert isinstance(norm, torch.nn.Module)
    return norm


def summand_names(model: Transformer) -> set[str]:
    return {name for name in model.trace_names if name.rsplit("hook_", 1)[-1] in OWN}


@pytest.mark.parametrize("compact", [True, False])
def test_the_layer_output_is_the_sum_of_its_two_traced_summands(compact: bool) -> None:
    model = gemma_moe()
    tokens = torch.randint(0, 40, (2, 11), generator=torch.Generator().manual_seed(1))
    _, trace = model.run_with_trace(tokens, compact=compact)
    eps = model.cfg.norm_eps
    for layer, block in enumerate(model.stack.blocks):
        mlp, at = block.mlp, f"blocks.{layer}."
        assert isinstance(mlp, FfnBesideExperts)
        dense, experts = trace[at + "mlp.hook_dense_out"], trace[at + "mlp.hook_experts_out"]
        assert dense.shape == experts.shape == (2, 11, 32)
        # each summand from the stages recorded before it: the FFN's product, the stream and the experts' weights
        with torch.inference_mode():
            own_dense = rms(mlp.W_out(trace[at + "mlp.hook_post"]), eps) * mlp.norm_dense_w
            stream = rms(trace[at + "hook_resid_mid"], eps) * mlp.norm_experts_in_w
            own_experts = rms(routed(mlp.experts, trace[at + "mlp.hook_expert_weights"], stream), eps) \
                * mlp.norm_experts_out_w
            # what the router and the experts read of the stream, each normalised its own way
            router_in = rms(trace[at + "hook_resid_mid"], eps) * mlp.router_scale / mlp.d_model ** 0.5
            own_logits = mlp.W_router(trace[at + "mlp.hook_router_in"])
            out = post_norm(block)(dense + experts)  # the block's norm after the FFN reads their sum
        torch.testing.assert_close(trace[at + "mlp.hook_router_in"], router_in, atol=TOL, rtol=TOL)
        torch.testing.assert_close(trace[at + "mlp.hook_router_logits"], own_logits, atol=TOL, rtol=TOL)
        torch.testing.assert_close(trace[at + "mlp.hook_experts_in"], stream, atol=TOL, rtol=TOL)
        torch.testing.assert_close(dense, own_dense, atol=TOL, rtol=TOL)
        torch.testing.assert_close(experts, own_experts, atol=TOL, rtol=TOL)
        torch.testing.assert_close(out, trace[at + "hook_mlp_out"], atol=TOL, rtol=TOL)
        assert experts.abs().max() > 0.1 and dense.abs().max() > 0.1  # both add something


def test_an_edit_of_a_summand_changes_the_layer_output() -> None:
    """The stages are on the forward path: zeroing the experts' sum leaves the norm after the FFN of the dense part."""
    model = gemma_moe()
    tokens = torch.arange(9)[None]
    zeroed = {"blocks.1.mlp.hook_experts_out": [lambda x, trace: torch.zeros_like(x)]}
    with torch.inference_mode(), Trace(model.trace_names, zeroed) as trace:
        model(tokens)
    with torch.inference_mode():
        dense_only = post_norm(model.stack.blocks[1])(trace["blocks.1.mlp.hook_dense_out"])
    torch.testing.assert_close(trace["blocks.1.hook_mlp_out"], dense_only, atol=TOL, rtol=TOL)


def test_the_summands_are_on_the_blocks_moe_layers_only() -> None:
    mixed = gemma_moe(moe_layers=(0, 2))
    assert summand_names(mixed) == {f"blocks.{layer}.mlp.hook_{s}" for layer in (0, 2) for s in OWN}
    qwen3_moe: dict[str, Any] = dict(vocab_size=40, d_model=32, n_layers=2, n_heads=4, n_ctx=64, pos_encoding="rope",
                                     norm="rmsnorm", activation="swiglu", n_experts=4, n_experts_used=2,
                                     expert_d_mlp=16)
    assert summand_names(Transformer(TransformerConfig(**qwen3_moe))) == set()
    assert summand_names(Transformer(TransformerConfig(**qwen3_moe, shared_expert_d_mlp=16))) == set()
    dense = gemma_moe(n_experts=0, n_experts_used=0, expert_d_mlp=None, expert_norm_topk=False,
                      experts_beside_mlp=False)
    assert summand_names(dense) == set()
