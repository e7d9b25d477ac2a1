"""Qwen3-MoE (transformers' Qwen3MoeForCausalLM, llama.cpp's qwen3moe): a router over experts in place of the FFN,
from Hugging Face directories (per-expert weights as save_pretrained writes them, or transformers 5's fused 3-D
tensors) and GGUF files the tests write (3-D expert tensors); parity with transformers over 100 positions on the same
(dequantized) weights, routing that picks different experts at different positions, and the refusals by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from checkpoints import build_model, load_checkpoint
from checkpoints.base import CheckpointError
from checkpoints.hf import convert_hf
from tests.checkpoints.gguf_files import _value_type, byte_level_vocab, finish, gguf, gguf_name, transformers
from tests.checkpoints.test_families import save_hf_directory

TOL = 1e-4
POSITIONS = 100
EXPERTS, USED, WIDTH = 8, 2, 32  # WIDTH: a multiple of Q8_0's 32-value blocks (ffn_down_exps rows are WIDTH long)


def tiny_moe(seed: int = 0, tied: bool = False, **changes: Any) -> Any:
    """A random Qwen3MoeForCausalLM: 3 layers × 64, 4 query / 2 K/V heads of 16, 8 experts of 32, 2 used."""
    torch.manual_seed(seed)
    config = transformers.Qwen3MoeConfig(**{
        "vocab_size": len(byte_level_vocab()[0]), "hidden_size": 64, "intermediate_size": 96,
        "moe_intermediate_size": WIDTH, "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 16, "num_experts": EXPERTS, "num_experts_per_tok": USED, "max_position_embeddings": 256,
        "rope_parameters": {"rope_type": "default", "rope_theta": 1000.0}, "rms_norm_eps": 1e-6,
        "attn_implementation": "eager", "tie_word_embeddings": tied, **changes})
    model = transformers.Qwen3MoeForCausalLM(config)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "norm" in name:
                param.copy_(1.0 + 0.3 * torch.randn_like(param))
            elif name.endswith("mlp.gate.weight"):  # a router sharp enough that the tokens disagree on experts
                param.copy_(0.5 * torch.randn_like(param))
    return model.eval()


def tokens(vocab: int) -> torch.Tensor:
    return torch.randint(0, vocab, (1, POSITIONS), generator=torch.Generator().manual_seed(3))


def compare(ours: torch.nn.Module, hf: Any) -> float:
    """The largest next-token log-prob difference over 100 positions; the top token equal at every position."""
    toks = tokens(hf.config.vocab_size)
    with torch.inference_mode():
        got, want = ours(toks).log_softmax(-1), hf(toks).logits.log_softmax(-1)
    assert torch.equal(got.argmax(-1), want.argmax(-1))
    return (got - want).abs().max().item()


def chosen_sets(model: Any, layer: int) -> set[tuple[int, ...]]:
    """The distinct sets of experts the 100 positions use in a layer (from the traced weights)."""
    _, trace = model.run_with_trace(tokens(model.cfg.vocab_size))
    weights = trace[f"blocks.{layer}.mlp.hook_expert_weights"][0]  # [pos, expert]
    return {tuple((row != 0).nonzero()[:, 0].tolist()) for row in weights}


@pytest.mark.parametrize(("changes", "moe_layers"), [
    ({}, None),
    ({"norm_topk_prob": True, "mlp_only_layers": [1]}, (0, 2)),
    ({"decoder_sparse_step": 2, "attention_bias": True}, (1,)),
], ids=["every-layer", "renormalised-dense-layer-1", "sparse-step-2"])
def test_directory_matches_transformers(tmp_path: Path, changes: dict[str, Any], moe_layers: Any) -> None:
    hf = tiny_moe(**changes)
    save_hf_directory(hf, tmp_path)  # per-expert weights (mlp.experts.E.gate_proj.weight, ...)
    loaded = load_checkpoint(tmp_path)
    cfg = loaded.model.cfg
    assert (cfg.n_experts, cfg.n_experts_used, cfg.expert_d_mlp, cfg.moe_layers) == (EXPERTS, USED, WIDTH, moe_layers)
    assert cfg.expert_norm_topk == changes.get("norm_topk_prob", False)
    assert compare(loaded.model, hf) <= TOL
    layer = (moe_layers or (0,))[0]
    sets = chosen_sets(loaded.model, layer)
    assert len(sets) >= 5 and all(len(chosen) == USED for chosen in sets)  # the positions route differently


def test_fused_experts_in_memory_match() -> None:
    """transformers 5 holds the experts fused (gate_up_proj [expert, 2·width, d_model]): split, they match too."""
    hf = tiny_moe(norm_topk_prob=True)
    state = dict(hf.state_dict())
    assert state["model.layers.0.mlp.experts.gate_up_proj"].shape == (EXPERTS, 2 * WIDTH, 64)
    cfg, converted = convert_hf(hf.config.to_dict(), state)
    assert compare(build_model(cfg, converted), hf) <= TOL


def test_routing_weights_are_the_renormalised_top_k() -> None:
    hf = tiny_moe(norm_topk_prob=True)
    cfg, converted = convert_hf(hf.config.to_dict(), dict(hf.state_dict()))
    _, trace = build_model(cfg, converted).run_with_trace(tokens(cfg.vocab_size))
    probs, weights = trace["blocks.1.mlp.hook_router_probs"], trace["blocks.1.mlp.hook_expert_weights"]
    top, chosen = probs.topk(USED, dim=-1)
    torch.testing.assert_close(weights.gather(-1, chosen), top / top.sum(-1, keepdim=True))
    torch.testing.assert_close(weights.sum(-1), torch.ones_like(weights.sum(-1)))
    assert ((weights != 0).sum(-1) == USED).all()


# ---------------------------------------------------------------- GGUF


def write_moe_gguf(path: Path, hf: Any, qtype: Any, extra: dict[str, Any] | None = None) -> dict[str, torch.Tensor]:
    """hf as llama.cpp's converter writes qwen3moe (expert tensors 3-D, in qtype like the other matrices; norms
    F32); returns the state dict of what the file holds, dequantized, for transformers."""
    cfg = hf.config
    writer = gguf.GGUFWriter(str(path), "qwen3moe")
    tokens_, merges, types = byte_level_vocab()
    arch = "qwen3moe"
    metadata: dict[str, Any] = {
        f"{arch}.block_count": cfg.num_hidden_layers, f"{arch}.context_length": cfg.max_position_embeddings,
        f"{arch}.embedding_length": cfg.hidden_size, f"{arch}.feed_forward_length": cfg.intermediate_size,
        f"{arch}.attention.head_count": cfg.num_attention_heads, f"{arch}.attention.key_length": cfg.head_dim,
        f"{arch}.attention.value_length": cfg.head_dim,
        f"{arch}.attention.head_count_kv": cfg.num_key_value_heads,
        f"{arch}.rope.freq_base": float(cfg.rope_parameters["rope_theta"]),
        f"{arch}.attention.layer_norm_rms_epsilon": float(cfg.rms_norm_eps),
        f"{arch}.expert_count": cfg.num_experts, f"{arch}.expert_used_count": cfg.num_experts_per_tok,
        f"{arch}.expert_feed_forward_length": cfg.moe_intermediate_size,
        "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "qwen2", "tokenizer.ggml.bos_token_id": 1,
        "tokenizer.ggml.eos_token_id": 2, "tokenizer.ggml.add_bos_token": False, **(extra or {}),
    }
    for key, value in metadata.items():
        writer.add_key_value(key, value, _value_type(value))
    writer.add_token_list(tokens_)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    width = cfg.moe_intermediate_size
    reference: dict[str, torch.Tensor] = {}

    def add(name: str, tensor: torch.Tensor) -> torch.Tensor:
        array = tensor.detach().float().numpy()
        kind = qtype if array.ndim >= 2 else gguf.GGMLQuantizationType.F32
        stored = gguf.quants.quantize(array, kind)
        writer.add_tensor(name, stored, raw_dtype=kind)
        return torch.from_numpy(np.array(gguf.quants.dequantize(stored, kind), dtype=np.float32)).reshape(array.shape)

    for hf_name, tensor in hf.state_dict().items():
        if hf_name == "lm_head.weight" and cfg.tie_word_embeddings:
            continue
        if hf_name.endswith("mlp.experts.gate_up_proj"):  # [expert, 2·width, d_model]: gate rows, then up rows
            blk = f"blk.{hf_name.split('.')[2]}."
            gate, up = add(blk + "ffn_gate_exps.weight", tensor[:, :width]), add(blk + "ffn_up_exps.weight",
                                                                                tensor[:, width:])
            reference[hf_name] = torch.cat([gate, up], dim=1)
        elif hf_name.endswith("mlp.experts.down_proj"):
            reference[hf_name] = add(f"blk.{hf_name.split('.')[2]}.ffn_down_exps.weight", tensor)
        elif hf_name.endswith("mlp.gate.weight"):
            reference[hf_name] = add(f"blk.{hf_name.split('.')[2]}.ffn_gate_inp.weight", tensor)
        else:
            reference[hf_name] = add(gguf_name(hf_name), tensor)
    return finish(writer, reference, cfg.tie_word_embeddings)


@pytest.mark.parametrize("qtype", ["F32", "F16", "Q8_0"])
def test_gguf_matches_transformers(tmp_path: Path, qtype: str) -> None:
    """llama.cpp's qwen3moe renormalises the chosen weights: the reference has norm_topk_prob."""
    hf = tiny_moe(norm_topk_prob=True, tied=qtype == "Q8_0")
    path = tmp_path / f"qwen3moe-{qtype}.gguf"
    hf.load_state_dict(write_moe_gguf(path, hf, gguf.GGMLQuantizationType[qtype]), strict=True)
    loaded = load_checkpoint(path)
    cfg = loaded.model.cfg
    assert (cfg.n_experts, cfg.n_experts_used, cfg.expert_width, cfg.expert_norm_topk) == (EXPERTS, USED, WIDTH, True)
    assert loaded.meta["tensor_types"].get(qtype)
    assert compare(loaded.model, hf) <= TOL
    assert len(chosen_sets(loaded.model, 2)) >= 5


@pytest.mark.parametrize(("extra", "named"), [
    ({"qwen3moe.expert_weights_norm": False}, "expert_weights_norm = False"),
    ({"qwen3moe.expert_gating_func": 2}, "expert_gating_func = 2"),
    ({"qwen3moe.expert_shared_count": 1}, "expert_shared_count = 1"),
    ({"qwen3moe.expert_shared_feed_forward_length": 32}, "expert_shared_feed_forward_length = 32"),
])
def test_gguf_keys_refused_by_name(tmp_path: Path, extra: dict[str, Any], named: str) -> None:
    path = tmp_path / "refused.gguf"
    write_moe_gguf(path, tiny_moe(), gguf.GGMLQuantizationType.F32, extra)
    with pytest.raises(CheckpointError, match=named):
        load_checkpoint(path)


@pytest.mark.parametrize(("change", "named"), [
    ({"use_sliding_window": True}, "use_sliding_window = True"),
    ({"decoder_sparse_step": 0}, "decoder_sparse_step = 0"),
    ({"mlp_only_layers": "all"}, "mlp_only_layers = 'all'"),
    ({"num_experts_per_tok": 9}, "n_experts_used must be from 1 to n_experts = 8"),
    ({"shared_expert_intermediate_size": 32}, "shared_expert_intermediate_size = 32"),
])
def test_fields_refused_by_name(change: dict[str, Any], named: str) -> None:
    hf = tiny_moe()
    with pytest.raises(CheckpointError, match=named):
        convert_hf(hf.config.to_dict() | change, dict(hf.state_dict()))


def test_qwen3_5_moe_has_records_of_its_own() -> None:
    """Qwen3.5-MoE adds gated DeltaNet layers and a shared expert: its names are read by its own records
    (checkpoints/families/qwen35_moe.py, qwen35_moe_vl.py; parity in tests/checkpoints/test_qwen35_moe.py), not by
    Qwen3-MoE's, whose records have no shared expert."""
    from checkpoints.families import GGUF_FAMILIES, HF_FAMILIES, qwen3_moe, qwen35_moe, qwen35_moe_vl

    assert HF_FAMILIES["qwen3_5_moe_text"] is qwen35_moe.HF and HF_FAMILIES["qwen3_5_moe"] is qwen35_moe_vl.HF
    assert GGUF_FAMILIES["qwen35moe"] is qwen35_moe.GGUF and qwen3_moe.GGUF.arch == "qwen3moe"


@pytest.mark.parametrize("qtype", ["F16", "Q8_0"])
def test_stored_experts_are_dequantized_only_when_routed(tmp_path: Path, qtype: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Over the float32 budget the experts stay as the file stores them, one memory-mapped slice each: a pass
    dequantizes exactly the experts its tokens are routed to, and matches transformers all the same."""
    from checkpoints.file_precision import load_policy
    from model.stored_weights import PartSource, StoredWeight

    hf = tiny_moe(norm_topk_prob=True)
    path = tmp_path / f"stored-{qtype}.gguf"
    hf.load_state_dict(write_moe_gguf(path, hf, gguf.GGMLQuantizationType[qtype]), strict=True)
    with load_policy(float32_budget=0):
        loaded = load_checkpoint(path)
    model = loaded.model
    expert = model.stack.blocks[0].mlp.experts[5].W_gate.weight
    assert isinstance(expert, StoredWeight) and isinstance(expert.source, PartSource)
    assert compare(model, hf) <= TOL
    read: list[int] = []
    original = PartSource.rows
    monkeypatch.setattr(PartSource, "rows", lambda self, index: read.append(self.index) or original(self, index))
    _, trace = model.run_with_trace(torch.tensor([[7]]))
    in_pass = len(read)  # reading a layer's stages below runs it again (a compact trace): routed experts only, too
    routed = [set((trace[f"blocks.{layer}.mlp.hook_expert_weights"][0, 0] != 0).nonzero()[:, 0].tolist())
              for layer in range(3)]
    assert in_pass == 3 * 3 * USED  # three matrices of the two chosen experts, in each of the three layers
    assert set(read) <= set().union(*routed)


def test_two_expert_counts_that_disagree_are_refused() -> None:
    hf = tiny_moe()
    with pytest.raises(CheckpointError, match="num_experts = 5 and num_local_experts = 8 disagree"):
        convert_hf(hf.config.to_dict() | {"num_experts": 5}, dict(hf.state_dict()))
