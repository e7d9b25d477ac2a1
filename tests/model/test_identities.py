"""Identities that must hold on every captured trace, for every architecture choice."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from model import Transformer, TransformerConfig
from model.positional import alibi_bias

ATOL = 1e-5


def make(**overrides: object) -> Transformer:
    base = dict(d_model=32, n_layers=2, n_heads=4, vocab_size=64, n_ctx=32, seed=1)
    base.update(overrides)
    return Transformer(TransformerConfig(**base)).eval()  # type: ignore[arg-type]


def tokens(n: int = 9, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, 64, (1, n), generator=torch.Generator().manual_seed(seed))


VARIANTS = [
    dict(architecture=a, pos_encoding=p, norm=n, norm_placement=pl, activation=act)
    for a, p, (n, pl), act in itertools.product(
        ["decoder", "encoder", "encoder-decoder"],
        ["sinusoidal", "learned", "rope", "alibi", "none"],
        [("layernorm", "pre"), ("rmsnorm", "post")],
        ["gelu", "swiglu"],
    )
]


def run(model: Transformer, toks: torch.Tensor):
    target = toks[:, :5] if model.cfg.architecture == "encoder-decoder" else None
    return model.run_with_trace(toks, target_tokens=target)


def attention_prefixes(model: Transformer) -> list[str]:
    return sorted({n.rsplit(".", 1)[0] for n in model.trace_names if n.endswith("hook_pattern")})


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: "-".join(str(x) for x in v.values()))
def test_attention_identities(variant: dict) -> None:
    model = make(**variant)
    _, trace = run(model, tokens())
    d_head = model.cfg.d_head
    for prefix in attention_prefixes(model):
        raw = trace[f"{prefix}.hook_scores_raw"]
        scaled = trace[f"{prefix}.hook_scores_scaled"]
        masked = trace[f"{prefix}.hook_attn_scores"]
        pattern = trace[f"{prefix}.hook_pattern"]
        expected = raw / math.sqrt(d_head)
        is_self = ".cross_attn" not in prefix
        if model.cfg.pos_encoding == "alibi" and is_self:
            causal = model.cfg.architecture != "encoder" and not prefix.startswith("encoder.")
            expected = expected + alibi_bias(model.cfg.n_heads, raw.shape[-2], raw.shape[-1], causal)
        torch.testing.assert_close(scaled, expected, atol=ATOL, rtol=0)
        torch.testing.assert_close(pattern, torch.softmax(masked, dim=-1), atol=ATOL, rtol=0)
        torch.testing.assert_close(pattern.sum(-1), torch.ones_like(pattern.sum(-1)), atol=ATOL, rtol=0)
        causal_stack = is_self and model.cfg.architecture != "encoder" and not prefix.startswith("encoder.")
        if causal_stack:
            upper = torch.triu(torch.ones_like(pattern[0, 0], dtype=torch.bool), diagonal=1)
            assert pattern[..., upper].abs().max().item() == 0.0
            assert torch.isinf(masked[..., upper]).all()
        q_heads_per_kv = model.cfg.n_heads // model.cfg.kv_heads
        v = trace[f"{prefix}.hook_v"].repeat_interleave(q_heads_per_kv, dim=2)  # [batch, pos, head, d_head]
        z = trace[f"{prefix}.hook_z"]
        torch.testing.assert_close(z, torch.einsum("bhqk,bkhd->bqhd", pattern, v), atol=ATOL, rtol=0)


@pytest.mark.parametrize("placement", ["pre", "post"])
@pytest.mark.parametrize("architecture", ["decoder", "encoder-decoder"])
def test_residual_stream_adds_up(placement: str, architecture: str) -> None:
    model = make(norm_placement=placement, architecture=architecture, pos_encoding="rope")
    _, trace = run(model, tokens())
    prefixes = sorted({n.split(".hook_resid_pre")[0] for n in trace if n.endswith("hook_resid_pre")})
    assert prefixes
    for p in prefixes:
        cross = f"{p}.hook_resid_cross" in trace
        before_mlp = trace[f"{p}.hook_resid_cross"] if cross else trace[f"{p}.hook_resid_mid"]
        if placement == "pre":
            torch.testing.assert_close(
                trace[f"{p}.hook_resid_mid"], trace[f"{p}.hook_resid_pre"] + trace[f"{p}.hook_attn_out"]
            )
            if cross:
                torch.testing.assert_close(
                    trace[f"{p}.hook_resid_cross"], trace[f"{p}.hook_resid_mid"] + trace[f"{p}.hook_cross_attn_out"]
                )
            torch.testing.assert_close(trace[f"{p}.hook_resid_post"], before_mlp + trace[f"{p}.hook_mlp_out"])
        else:
            torch.testing.assert_close(
                trace[f"{p}.hook_resid_mid_unnormed"], trace[f"{p}.hook_resid_pre"] + trace[f"{p}.hook_attn_out"]
            )
            torch.testing.assert_close(trace[f"{p}.hook_resid_mid"], trace[f"{p}.ln1.hook_normalized"])
            torch.testing.assert_close(trace[f"{p}.hook_resid_post_unnormed"], before_mlp + trace[f"{p}.hook_mlp_out"])
            torch.testing.assert_close(trace[f"{p}.hook_resid_post"], trace[f"{p}.ln2.hook_normalized"])


def test_layernorm_statistics() -> None:
    model = make(norm="layernorm")
    _, trace = run(model, tokens())
    x = trace["blocks.0.hook_resid_pre"]
    torch.testing.assert_close(trace["blocks.0.ln1.hook_mean"], x.mean(-1))
    torch.testing.assert_close(trace["blocks.0.ln1.hook_scale"], (x.var(-1, unbiased=False) + 1e-5).sqrt())
    torch.testing.assert_close(
        trace["blocks.0.ln1.hook_normalized"], torch.nn.functional.layer_norm(x, (32,), eps=1e-5)
    )


def test_rmsnorm_statistics() -> None:
    model = make(norm="rmsnorm")
    _, trace = run(model, tokens())
    x = trace["blocks.1.hook_resid_pre"]
    torch.testing.assert_close(trace["blocks.1.ln1.hook_scale"], (x.pow(2).mean(-1) + 1e-5).sqrt())
    assert "blocks.1.ln1.hook_mean" not in trace


def test_swiglu_stages() -> None:
    model = make(activation="swiglu")
    _, trace = run(model, tokens())
    pre, gate, up, post = (trace[f"blocks.0.mlp.hook_{s}"] for s in ("pre", "gate", "up", "post"))
    torch.testing.assert_close(gate, torch.nn.functional.silu(pre))
    torch.testing.assert_close(post, gate * up)


def test_embedding_stage_sums() -> None:
    model = make(pos_encoding="sinusoidal")
    _, trace = run(model, tokens())
    torch.testing.assert_close(trace["blocks.0.hook_resid_pre"], trace["hook_embed"] + trace["hook_pos_embed"])


@pytest.mark.parametrize("window", [1, 3])
@pytest.mark.parametrize("architecture", ["decoder", "encoder"])
def test_sliding_window_hides_far_keys(window: int, architecture: str) -> None:
    model = make(sliding_window=window, architecture=architecture)
    _, trace = run(model, tokens(10))
    pattern = trace["blocks.0.attn.hook_pattern"][0]  # [head, q_pos, k_pos]
    q = torch.arange(10)[:, None]
    k = torch.arange(10)[None, :]
    outside = (q - k).abs() >= window
    if architecture == "decoder":
        outside |= k > q
    assert pattern[:, outside].abs().max().item() == 0.0
    assert (pattern[:, ~outside] > 0).all()


def test_padding_mask_hides_pad_keys_and_keeps_real_outputs() -> None:
    model = make(architecture="encoder")
    toks = tokens(8)
    padded = torch.cat([toks, torch.zeros(1, 3, dtype=torch.long)], dim=1)
    mask = torch.cat([torch.ones(1, 8), torch.zeros(1, 3)], dim=1).bool()
    out_padded, trace = model.run_with_trace(padded, padding_mask=mask)
    out_plain, _ = model.run_with_trace(toks)
    assert trace["blocks.0.attn.hook_pattern"][..., 8:].abs().max().item() == 0.0
    torch.testing.assert_close(out_padded[:, :8], out_plain, atol=1e-5, rtol=0)


def test_capturing_does_not_change_outputs() -> None:
    model = make(pos_encoding="rope", n_kv_heads=2, activation="swiglu", norm="rmsnorm")
    toks = tokens()
    with torch.inference_mode():
        plain = model(toks)
    traced, trace = model.run_with_trace(toks, compact=False)
    compact, _ = model.run_with_trace(toks)
    filtered, small = model.run_with_trace(toks, names=["blocks.1.attn.hook_pattern"])
    assert torch.equal(plain, traced) and torch.equal(plain, filtered) and torch.equal(plain, compact)
    assert list(small) == ["blocks.1.attn.hook_pattern"]
    assert small.nbytes() < trace.nbytes() / 20


def test_names_filter_patterns_and_errors() -> None:
    model = make()
    _, trace = model.run_with_trace(tokens(), names=["blocks.0.attn.*"])
    assert list(trace) and all(n.startswith("blocks.0.attn.") for n in trace)
    _, trace = model.run_with_trace(tokens(), names=lambda n: n.endswith("hook_z"))
    assert list(trace) == ["blocks.0.attn.hook_z", "blocks.1.attn.hook_z"]
    with pytest.raises(KeyError, match="no trace stage"):
        model.run_with_trace(tokens(), names=["blocks.9.attn.hook_pattern"])


def test_every_captured_tensor_knows_its_dims() -> None:
    model = make(architecture="encoder-decoder", pos_encoding="rope", n_kv_heads=2)
    _, trace = run(model, tokens())
    for name, tensor in trace.items():
        assert len(trace.dims[name]) == tensor.dim(), name
    assert trace.dims["decoder.blocks.0.cross_attn.hook_pattern"] == ("batch", "head", "q_pos", "k_pos")
    assert trace["decoder.blocks.0.cross_attn.hook_pattern"].shape == (1, 4, 5, 9)
    assert trace.dims["encoder.blocks.0.attn.hook_k"] == ("batch", "pos", "kv_head", "d_head")
    assert trace["encoder.blocks.0.attn.hook_k"].shape[2] == 2


def test_concurrent_traces_do_not_mix() -> None:
    from concurrent.futures import ThreadPoolExecutor

    model = make()
    inputs = [tokens(5 + i, seed=i) for i in range(6)]

    def work(t: torch.Tensor) -> tuple[int, int]:
        _, trace = model.run_with_trace(t, names=["blocks.0.attn.hook_pattern"])
        return t.shape[1], trace["blocks.0.attn.hook_pattern"].shape[-1]

    with ThreadPoolExecutor(4) as pool:
        for n, k in pool.map(work, inputs * 3):
            assert n == k


@pytest.mark.parametrize("architecture", ["decoder", "encoder-decoder"])
def test_fused_training_attention_is_the_same_math(architecture: str) -> None:
    model = make(architecture=architecture, pos_encoding="rope", n_kv_heads=2)
    toks = tokens()
    target = toks[:, :5] if architecture == "encoder-decoder" else None
    with torch.no_grad():
        explicit = model(toks, target_tokens=target)
        with model.fused_attention():
            fused = model(toks, target_tokens=target)
            with pytest.raises(RuntimeError, match="cannot trace"):
                model.run_with_trace(toks, target_tokens=target)
        after = model(toks, target_tokens=target)
    torch.testing.assert_close(fused, explicit, atol=1e-5, rtol=0)
    assert torch.equal(after, explicit)  # the explicit, traceable path is back
