"""Qwen3.5-MoE (qwen35_moe: Hugging Face qwen3_5_moe_text, GGUF qwen35moe; qwen35_moe_vl: the published wrapper
qwen3_5_moe) from directories and GGUF files the tests write: next-token log-probs equal transformers' within 1e-4
over 100 positions (and the same top token everywhere) on a tiny random hybrid with a mixture of experts and a shared
expert in every layer: three gated DeltaNet layers and one gated attention layer (a convolution of 4 tokens, two
chunks of transformers' chunked delta rule), 8 experts of 32, 2 chosen, a shared expert of 64 whose gate differs from
token to token, and routing that sends different positions to different experts. Fields and keys not implemented
are refused by name."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import torch

from checkpoints import CheckpointError, build_model, load_checkpoint
from checkpoints.hf import convert_hf
from model.generate import generate
from tests.checkpoints.gguf_files import byte_level_vocab, gguf, transformers
from tests.checkpoints.test_families import compare, save_hf_directory, tokens
from tests.checkpoints.test_qwen35 import write_qwen35_gguf

TOL = 1e-4
EXPERTS, USED, WIDTH, SHARED = 8, 2, 32, 64  # widths: multiples of Q8_0's 32-value blocks


def text_fields(**changes: Any) -> dict[str, Any]:
    return dict(
        vocab_size=len(byte_level_vocab()[0]), hidden_size=64, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, head_dim=32, linear_key_head_dim=16, linear_value_head_dim=24, linear_num_key_heads=2,
        linear_num_value_heads=4, linear_conv_kernel_dim=4, max_position_embeddings=256, rms_norm_eps=1e-6,
        num_experts=EXPERTS, num_experts_per_tok=USED, moe_intermediate_size=WIDTH,
        shared_expert_intermediate_size=SHARED,
        rope_parameters={"rope_type": "default", "rope_theta": 1000.0, "partial_rotary_factor": 0.25}) | changes


def randomized(model: torch.nn.Module) -> torch.nn.Module:
    """Gains away from 1 (a 1 + w mix-up shows), routers sharp enough that the tokens disagree on experts,
    shared-expert gates that differ from token to token (transformers' init leaves them all near 0.5), and experts
    whose outputs are as large as the stream (at transformers' init of 0.02 they would hardly move the logits)."""
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "norm" in name:  # the gated norm's gain is w itself (ones), the others' 1 + w (zeros)
                param.copy_(0.3 * torch.randn_like(param) + (1.0 if "linear_attn.norm" in name else 0.0))
            elif name.endswith(("mlp.gate.weight", "shared_expert_gate.weight")):
                param.copy_(0.5 * torch.randn_like(param))
            elif ".mlp." in name:
                param.copy_(0.15 * torch.randn_like(param))
    return model.eval()


def tiny_qwen35_moe(seed: int = 0, **changes: Any) -> torch.nn.Module:
    torch.manual_seed(seed)
    config = transformers.Qwen3_5MoeTextConfig(**text_fields(**changes), attn_implementation="eager")
    return randomized(transformers.Qwen3_5MoeForCausalLM(config))


def routed_sets(model: torch.nn.Module, layer: int) -> set[tuple[int, ...]]:
    _, trace = model.run_with_trace(tokens(model.cfg.vocab_size))
    weights = trace[f"blocks.{layer}.mlp.hook_expert_weights"][0]  # [pos, expert]
    return {tuple((row != 0).nonzero()[:, 0].tolist()) for row in weights}


# ---------------------------------------------------------------- Hugging Face directories


def test_qwen35_moe_directory_matches_transformers(tmp_path: Path) -> None:
    hf = tiny_qwen35_moe()
    save_hf_directory(hf, tmp_path)
    loaded = load_checkpoint(tmp_path)
    cfg = loaded.model.cfg
    assert loaded.meta["model_type"] == "qwen3_5_moe_text"
    assert cfg.deltanet_layers == (0, 1, 2) and cfg.moe_layers is None and cfg.expert_norm_topk
    assert (cfg.n_experts, cfg.n_experts_used, cfg.expert_width, cfg.shared_expert_d_mlp) == (EXPERTS, USED, WIDTH,
                                                                                               SHARED)
    toks = tokens(cfg.vocab_size)
    assert toks.shape[1] == 100  # past one chunk (64) of transformers' chunked delta rule
    assert compare(loaded.model, hf, toks) <= TOL
    for layer in (0, 3):  # a DeltaNet layer's and the attention layer's experts: the positions route differently
        sets = routed_sets(loaded.model, layer)
        assert len(sets) >= 5 and all(len(chosen) == USED for chosen in sets)
    _, trace = loaded.model.run_with_trace(toks)
    gate = trace["blocks.1.mlp.hook_shared_gate"]
    assert gate.shape == (1, 100) and bool(((gate > 0) & (gate < 1)).all()) and gate.std().item() > 0.05
    assert trace["blocks.1.mlp.hook_shared_out"].shape == (1, 100, 64)


def test_fused_experts_in_memory_match() -> None:
    """transformers 5 holds the experts fused (gate_up_proj [expert, 2·width, d_model]): split, they match too."""
    hf = tiny_qwen35_moe(seed=1)
    state = dict(hf.state_dict())
    assert state["model.layers.0.mlp.experts.gate_up_proj"].shape == (EXPERTS, 2 * WIDTH, 64)
    cfg, converted = convert_hf(hf.config.to_dict(), state)
    assert compare(build_model(cfg, converted), hf, tokens(cfg.vocab_size)) <= TOL


def test_the_shared_expert_and_its_gate_matter() -> None:
    """The same model without its shared expert's output, or with its gate left at 1, gives other numbers: the
    parity test can fail."""
    hf = tiny_qwen35_moe()
    cfg, converted = convert_hf(hf.config.to_dict(), dict(hf.state_dict()))
    toks = tokens(cfg.vocab_size)
    for name, value in (("shared_expert.W_out.weight", 0.0), ("W_shared_gate.weight", None)):
        model = build_model(cfg, {k: v.clone() for k, v in converted.items()})  # not transformers' own tensors
        with torch.no_grad():
            for block in model.stack.blocks:
                weight = block.mlp.get_parameter(name)
                weight.copy_(torch.zeros_like(weight) if value is not None else weight + 100.0)
            got = model(toks).log_softmax(-1)
            want = hf(toks).logits.log_softmax(-1)
        assert (got - want).abs().max().item() > 10 * TOL, name


def test_active_parameters_count_the_shared_expert() -> None:
    """One token's pass uses its 2 chosen experts and the shared expert (and its gate) in every layer."""
    hf = tiny_qwen35_moe()
    cfg, converted = convert_hf(hf.config.to_dict(), dict(hf.state_dict()))
    counts = build_model(cfg, converted).parameter_counts()
    expert, shared = 3 * 64 * WIDTH, 3 * 64 * SHARED + 64
    assert counts["total"] == sum(p.numel() for p in hf.parameters())
    assert counts["active"] == counts["total"] - 4 * (EXPERTS - USED) * expert
    assert counts["mlp"] == 4 * (EXPERTS * expert + shared + EXPERTS * 64)  # experts, shared expert, router


def test_cached_decoding_equals_the_full_pass(tmp_path: Path) -> None:
    save_hf_directory(tiny_qwen35_moe(), tmp_path)
    model = load_checkpoint(tmp_path).model
    prompt = tokens(model.cfg.vocab_size)[0, :70].tolist()
    cached = generate(model, prompt, max_new_tokens=8, use_cache=True)
    assert len(cached) == 8 and cached == generate(model, prompt, max_new_tokens=8, use_cache=False)


@pytest.mark.parametrize(("field", "value"), [
    ("norm_topk_prob", False), ("mlp_only_layers", [1]), ("decoder_sparse_step", 2), ("hidden_act", "gelu"),
])
def test_fields_not_implemented_are_refused_by_name(field: str, value: Any) -> None:
    hf = tiny_qwen35_moe()
    with pytest.raises(CheckpointError, match=re.escape(f"config field {field} = {value!r}")):
        convert_hf(hf.config.to_dict() | {field: value}, dict(hf.state_dict()))


def test_the_published_wrapper_qwen35_moe_vl_reads_its_text_model(tmp_path: Path) -> None:
    """qwen35_moe_vl: a Qwen3_5MoeForConditionalGeneration directory (model_type qwen3_5_moe, as
    Qwen/Qwen3.5-35B-A3B is published): its text model's next-token log-probs equal transformers' on text."""
    torch.manual_seed(0)
    config = transformers.Qwen3_5MoeConfig(text_config=text_fields(), vision_config=dict(
        depth=1, hidden_size=32, num_heads=2, intermediate_size=32, out_hidden_size=64, patch_size=4,
        temporal_patch_size=2, spatial_merge_size=2))
    hf = transformers.Qwen3_5MoeForConditionalGeneration(config)
    with torch.no_grad():
        for name, param in hf.named_parameters():
            if "language_model" in name and "norm" in name:
                param.copy_(0.3 * torch.randn_like(param) + (1.0 if "linear_attn.norm" in name else 0.0))
            elif "language_model" in name and name.endswith(("mlp.gate.weight", "shared_expert_gate.weight")):
                param.copy_(0.5 * torch.randn_like(param))
    hf.eval()
    save_hf_directory(hf, tmp_path)
    written = json.loads((tmp_path / "config.json").read_text())
    assert written["model_type"] == "qwen3_5_moe" and "vision_config" in written
    loaded = load_checkpoint(tmp_path)
    assert loaded.meta["model_type"] == "qwen3_5_moe" and loaded.model.cfg.shared_expert_d_mlp == SHARED
    assert compare(loaded.model, hf, tokens(loaded.model.cfg.vocab_size)) <= TOL
    written["text_config"]["norm_topk_prob"] = False
    (tmp_path / "config.json").write_text(json.dumps(written))
    with pytest.raises(CheckpointError, match=re.escape("(text_config): config field norm_topk_prob = False")):
        load_checkpoint(tmp_path)


# ---------------------------------------------------------------- GGUF files


@pytest.mark.parametrize(("qtype", "merged"), [("F32", False), ("F16", False), ("Q8_0", False), ("Q8_0", True)],
                         ids=["F32", "F16", "Q8_0", "Q8_0-merged-gate-up"])
def test_qwen35moe_gguf_matches_transformers_on_the_same_weights(tmp_path: Path, qtype: str, merged: bool) -> None:
    hf = tiny_qwen35_moe()
    path = tmp_path / f"qwen35moe-{qtype}.gguf"
    reference_state = write_qwen35_gguf(path, hf, gguf.GGMLQuantizationType[qtype], arch="qwen35moe",
                                        merged_experts=merged)
    reference = tiny_qwen35_moe()
    reference.load_state_dict(reference_state)
    loaded = load_checkpoint(path)
    cfg = loaded.model.cfg
    assert loaded.meta["gguf_architecture"] == "qwen35moe" and loaded.meta["tensor_types"].get(qtype)
    assert cfg.deltanet_layers == (0, 1, 2) and (cfg.n_experts, cfg.expert_width, cfg.shared_expert_d_mlp) == (
        EXPERTS, WIDTH, SHARED)
    toks = tokens(cfg.vocab_size)
    assert compare(loaded.model, reference.eval(), toks) <= TOL
    assert len(routed_sets(loaded.model, 2)) >= 5
    if qtype == "F32":  # the file is the model
        assert compare(loaded.model, hf, toks) <= TOL


@pytest.mark.parametrize(("key", "value", "named"), [
    ("qwen35moe.expert_weights_norm", False, "qwen35moe.expert_weights_norm = False"),
    ("qwen35moe.expert_gating_func", 2, "qwen35moe.expert_gating_func = 2"),
    ("qwen35moe.expert_shared_count", 2, "qwen35moe.expert_shared_count = 2"),
    ("qwen35moe.expert_weights_scale", 2.5, "qwen35moe.expert_weights_scale = 2.5"),
    ("qwen35moe.nextn_predict_layers", 1, "qwen35moe.nextn_predict_layers = 1"),
    ("qwen35moe.expert_shared_feed_forward_length", None, "qwen35moe.expert_shared_feed_forward_length"),
])
def test_gguf_keys_not_implemented_are_refused_by_name(tmp_path: Path, key: str, value: Any, named: str) -> None:
    path = tmp_path / "qwen35moe.gguf"
    write_qwen35_gguf(path, tiny_qwen35_moe(), gguf.GGMLQuantizationType.F32, extra={key: value}, arch="qwen35moe")
    with pytest.raises(CheckpointError, match=re.escape(named)):
        load_checkpoint(path)


@pytest.mark.parametrize("qtype", ["F16", "Q8_0"])
def test_stored_experts_are_dequantized_only_when_routed(tmp_path: Path, qtype: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Over the float32 budget the routed experts stay memory-mapped slices of the file, dequantized only when a
    token is routed to them (the shared expert, which every token uses, is read whole as any matrix), and the
    pass gives the float32 numbers."""
    from checkpoints.file_precision import load_policy
    from model.stored_weights import PartSource, StoredWeight
    from tests.checkpoints.test_file_precision import assert_same_pass

    path = tmp_path / f"stored-{qtype}.gguf"
    write_qwen35_gguf(path, tiny_qwen35_moe(), gguf.GGMLQuantizationType[qtype], arch="qwen35moe")
    eager = load_checkpoint(path).model
    with load_policy(float32_budget=0):
        stored = load_checkpoint(path).model
    mlp = stored.stack.blocks[0].mlp
    assert isinstance(mlp.experts[5].W_gate.weight, StoredWeight) and isinstance(
        mlp.experts[5].W_gate.weight.source, PartSource)
    assert isinstance(mlp.shared_expert.W_gate.weight, StoredWeight)
    assert_same_pass(eager, stored)
    read: list[int] = []
    original = PartSource.rows
    monkeypatch.setattr(PartSource, "rows", lambda self, index: read.append(self.index) or original(self, index))
    _, trace = stored.run_with_trace(torch.tensor([[7]]))
    in_pass = len(read)  # reading a layer's stages below runs it again (a compact trace): routed experts only, too
    routed = [set((trace[f"blocks.{layer}.mlp.hook_expert_weights"][0, 0] != 0).nonzero()[:, 0].tolist())
              for layer in range(4)]
    assert in_pass == 4 * 3 * USED  # three matrices of the two chosen experts, in each of the four layers
    assert set(read) <= set().union(*routed)
