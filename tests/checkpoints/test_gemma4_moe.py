"""Gemma 4's mixture-of-experts block (gemma4: Hugging Face gemma4_text with enable_moe_block, as Gemma 4 26B-A4B):
the experts run beside each layer's FFN, their router reading the residual stream through a norm without gain and
scales of its own, each chosen weight times its expert's scale, the FFN's and the experts' outputs each normed and
added. On test_gemma4.py's tiny random model (6 layers: local and global, shared K/V, per-layer inputs, layer
scalars) with 8 experts of 32, 2 chosen, in every layer: next-token log-probs equal transformers' within 1e-4 over
100 positions, the same top token everywhere, routing that sends different positions to different experts, from a
directory and from GGUF files (F32, F16, Q8_0) as llama.cpp's converter writes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from checkpoints import CheckpointError, build_model, load_checkpoint
from checkpoints.hf import convert_hf
from lab.reproduced import refusal
from tests.checkpoints.gguf_files import gguf
from tests.checkpoints.test_families import compare, save_hf_directory, tokens
from tests.checkpoints.test_gemma4 import tiny_gemma4, write_gemma4_gguf

TOL = 1e-4
EXPERTS, USED, WIDTH = 8, 2, 32
MOE = {"enable_moe_block": True, "num_experts": EXPERTS, "top_k_experts": USED, "moe_intermediate_size": WIDTH}


def tiny_gemma4_moe(seed: int = 0, **changes: Any) -> torch.nn.Module:
    """Routers sharp enough that the tokens disagree on experts, router and per-expert scales away from 1, experts
    whose outputs count (at transformers' init of 0.02 they would hardly move the logits)."""
    hf = tiny_gemma4(seed, **MOE, **changes)
    with torch.no_grad():
        for name, param in hf.named_parameters():
            if name.endswith("router.proj.weight"):
                param.copy_(4.0 * torch.randn_like(param))
            elif name.endswith(("router.scale", "router.per_expert_scale")):
                param.copy_(0.5 + torch.rand_like(param))
            elif ".experts." in name:
                param.copy_(0.15 * torch.randn_like(param))
    return hf.eval()


def ours(hf: torch.nn.Module) -> torch.nn.Module:
    cfg, converted = convert_hf(hf.config.to_dict(), dict(hf.state_dict()))
    return build_model(cfg, {name: tensor.clone() for name, tensor in converted.items()})  # not transformers' own


def test_gemma4_moe_directory_matches_transformers(tmp_path: Path) -> None:
    hf = tiny_gemma4_moe()
    save_hf_directory(hf, tmp_path)
    model = load_checkpoint(tmp_path).model
    cfg = model.cfg
    assert cfg.experts_beside_mlp and (cfg.n_experts, cfg.n_experts_used, cfg.expert_width) == (EXPERTS, USED, WIDTH)
    toks = tokens(cfg.vocab_size)
    assert toks.shape[1] == 100
    assert compare(model, hf, toks) <= TOL
    _, trace = model.run_with_trace(toks)
    for layer in (0, 1, 5):  # local, global and a layer that shares K/V
        weights = trace[f"blocks.{layer}.mlp.hook_expert_weights"][0]  # [pos, expert]
        sets = {tuple((row != 0).nonzero()[:, 0].tolist()) for row in weights}
        assert len(sets) >= 5 and all(len(chosen) == USED for chosen in sets)
        assert f"blocks.{layer}.mlp.hook_pre" in trace  # the FFN runs too, beside the experts
    # each chosen weight: its renormalised probability times its expert's own scale (not adding up to 1)
    probs, weights = trace["blocks.1.mlp.hook_router_probs"], trace["blocks.1.mlp.hook_expert_weights"]
    top, chosen = probs.topk(USED, dim=-1)
    scale = hf.model.layers[1].router.per_expert_scale.detach()
    torch.testing.assert_close(weights.gather(-1, chosen), top / top.sum(-1, keepdim=True) * scale[chosen])


def test_the_experts_and_their_scales_matter() -> None:
    """Without the experts' output, or with the per-expert scales at 1, the numbers are other: the test can fail."""
    hf = tiny_gemma4_moe()
    toks = tokens(hf.config.vocab_size)
    with torch.inference_mode():
        want = hf(toks).logits.log_softmax(-1)
    for name, value in (("norm_experts_out_w", 0.0), ("per_expert_scale", 1.0)):
        model = ours(hf)
        with torch.no_grad():
            for block in model.stack.blocks:
                getattr(block.mlp, name).fill_(value)
            got = model(toks).log_softmax(-1)
        assert (got - want).abs().max().item() > 10 * TOL, name


def test_active_parameters_leave_out_the_unchosen_experts() -> None:
    counts = ours(tiny_gemma4_moe()).parameter_counts()
    assert counts["active"] == counts["total"] - 6 * (EXPERTS - USED) * 3 * 64 * WIDTH


def test_the_lab_names_the_block_where_it_redoes_the_math() -> None:
    reason = refusal(ours(tiny_gemma4_moe()).cfg, "attention flow")
    assert reason is not None and "the mixture of experts beside each FFN (8 experts, 2 chosen" in reason


@pytest.mark.parametrize(("change", "named"), [
    ({"top_k_experts": 0}, "top_k_experts = 0"), ({"moe_intermediate_size": None}, "moe_intermediate_size = None"),
])
def test_sizes_not_implemented_are_refused_by_name(change: dict[str, Any], named: str) -> None:
    hf = tiny_gemma4_moe()
    with pytest.raises(CheckpointError, match=named):
        convert_hf(hf.config.to_dict() | change, dict(hf.state_dict()))


def test_cached_decoding_equals_the_full_pass(tmp_path: Path) -> None:
    """Each new token routed alone, with the cache, continues as a full pass."""
    from model.generate import generate

    save_hf_directory(tiny_gemma4_moe(), tmp_path)
    model = load_checkpoint(tmp_path).model
    prompt = tokens(model.cfg.vocab_size)[0, :40].tolist()
    cached = generate(model, prompt, max_new_tokens=8, use_cache=True)
    assert len(cached) == 8 and cached == generate(model, prompt, max_new_tokens=8, use_cache=False)


def test_kept_in_float16_the_experts_stay_stored_and_give_the_same_numbers(tmp_path: Path) -> None:
    from checkpoints.file_precision import load_policy
    from model.stored_weights import StoredWeight

    save_hf_directory(tiny_gemma4_moe().to(torch.float16), tmp_path)
    eager = load_checkpoint(tmp_path).model
    with load_policy(float32_budget=0):
        stored = load_checkpoint(tmp_path).model
    assert isinstance(stored.stack.blocks[0].mlp.experts[3].W_gate.weight, StoredWeight)
    toks = tokens(eager.cfg.vocab_size)
    with torch.inference_mode():
        torch.testing.assert_close(stored(toks), eager(toks), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("qtype", ["F32", "F16", "Q8_0"])
def test_gemma4_moe_gguf_matches_transformers_on_the_same_weights(tmp_path: Path, qtype: str) -> None:
    hf = tiny_gemma4_moe()
    path = tmp_path / f"gemma4-moe-{qtype}.gguf"
    reference_state = write_gemma4_gguf(path, hf, gguf.GGMLQuantizationType[qtype])
    reference = tiny_gemma4_moe()
    reference.load_state_dict(reference_state)  # transformers' model with the weights as the file holds them
    loaded = load_checkpoint(path)
    cfg = loaded.model.cfg
    assert cfg.experts_beside_mlp and (cfg.n_experts, cfg.n_experts_used, cfg.expert_width) == (EXPERTS, USED, WIDTH)
    assert loaded.meta["tensor_types"].get(qtype)
    assert compare(loaded.model, reference.eval(), tokens(cfg.vocab_size)) <= TOL


def test_stored_gguf_experts_are_slices_of_the_file(tmp_path: Path) -> None:
    """Over the float32 budget each expert's gate and up rows stay a memory-mapped slice of ffn_gate_up_exps, and
    the pass gives the float32 numbers."""
    from checkpoints.file_precision import load_policy
    from model.stored_weights import PartSource, StoredWeight

    path = tmp_path / "gemma4-moe.gguf"
    write_gemma4_gguf(path, tiny_gemma4_moe(), gguf.GGMLQuantizationType.Q8_0)
    eager = load_checkpoint(path).model
    with load_policy(float32_budget=0):
        stored = load_checkpoint(path).model
    weight = stored.stack.blocks[0].mlp.experts[3].W_in.weight
    assert isinstance(weight, StoredWeight) and isinstance(weight.source, PartSource) and weight.shape == (WIDTH, 64)
    toks = tokens(eager.cfg.vocab_size)
    with torch.inference_mode():
        torch.testing.assert_close(stored(toks), eager(toks), rtol=1e-6, atol=1e-6)
