"""A compact trace (run_with_trace's full trace: what flows between blocks kept, a block run again when read) reads
what a trace that keeps every tensor reads, for every architecture choice and with padding; a trace with edits
or a KV cache keeps every tensor; threads reading one cached trace agree."""

from __future__ import annotations

import threading

import pytest
import torch

from model import Transformer, TransformerConfig
from model.compact_trace import CompactTrace
from model.edits import Interventions
from model.kv_cache import KVCache
from tests.lab.test_gemma4_lab import GEMMA4

BASE = dict(d_model=32, n_layers=2, n_heads=4, vocab_size=64, n_ctx=32, seed=1)
CONFIGS = {
    "gpt2": dict(pos_encoding="learned", activation="gelu_tanh"),
    "llama-gqa": dict(pos_encoding="rope", norm="rmsnorm", activation="swiglu", n_kv_heads=2, bias=False),
    "gemma2": dict(pos_encoding="rope", norm="rmsnorm", activation="geglu_tanh", post_norms=True, attn_softcap=5.0,
                   logit_softcap=3.0, sliding_window=4, window_layers=(0,)),
    "qwen3": dict(pos_encoding="rope", norm="rmsnorm", activation="swiglu", qk_norm=True, n_kv_heads=2),
    "phi-partial-rotary": dict(pos_encoding="rope", norm="rmsnorm", activation="swiglu", rope_dims=4),
    "alibi": dict(pos_encoding="alibi"),
    "bert-post-ln": dict(architecture="encoder", norm_placement="post"),
    "t5-like": dict(architecture="encoder-decoder", pos_encoding="sinusoidal", norm="rmsnorm"),
    "qwen3.5-hybrid": dict(n_layers=4, pos_encoding="rope", norm="rmsnorm", activation="swiglu", n_kv_heads=2,
                           qk_norm=True, attn_output_gate=True, rope_dims=4, deltanet_layers=(0, 1, 2),
                           deltanet_key_heads=2, deltanet_value_heads=4, deltanet_key_dim=8, deltanet_value_dim=8,
                           deltanet_conv=4),
    "moe": dict(pos_encoding="rope", norm="rmsnorm", activation="swiglu", n_experts=4, n_experts_used=2,
                expert_d_mlp=16, shared_expert_d_mlp=16),
    "smollm3-nope": dict(n_layers=4, pos_encoding="rope", norm="rmsnorm", activation="swiglu", nope_layers=(3,)),
    "gemma4": GEMMA4,
}


def make(name: str) -> Transformer:
    config = CONFIGS[name]
    settings = config if name == "gemma4" else {**BASE, **config}
    return Transformer(TransformerConfig(**settings)).eval()  # type: ignore[arg-type]


def tokens(model: Transformer, n: int = 11, batch: int = 1) -> torch.Tensor:
    return torch.randint(0, model.cfg.vocab_size, (batch, n), generator=torch.Generator().manual_seed(0))


def trace_both(model: Transformer, toks: torch.Tensor, **kwargs):  # type: ignore[no-untyped-def]
    if model.cfg.architecture == "encoder-decoder":
        kwargs.setdefault("target_tokens", toks[:, :5])
    compact = model.run_with_trace(toks, **kwargs)
    kept = model.run_with_trace(toks, compact=False, **kwargs)
    return compact, kept


def assert_same(compact, kept) -> None:  # type: ignore[no-untyped-def]
    (out_a, a), (out_b, b) = compact, kept
    torch.testing.assert_close(out_a, out_b, rtol=0, atol=1e-6)
    assert list(a) == list(b)  # the same stages, in the same (execution) order
    assert a.dims == b.dims
    for name in b:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=1e-6, equal_nan=True, msg=name)


@pytest.mark.parametrize("name", CONFIGS)
def test_a_compact_trace_reads_what_a_full_one_holds(name: str) -> None:
    model = make(name)
    compact, kept = trace_both(model, tokens(model))
    assert isinstance(compact[1], CompactTrace) and not isinstance(kept[1], CompactTrace)
    assert_same(compact, kept)
    blocks = model.cfg.n_layers + (model.cfg.decoder_layers if model.cfg.architecture == "encoder-decoder" else 0)
    assert len(compact[1].calls) == blocks
    assert compact[1].nbytes() < kept[1].nbytes()  # counting the one block it keeps after a read
    assert all(".attn." not in name and ".mlp." not in name for name in compact[1].tensors)


def test_a_compact_trace_with_padding_and_a_blind_query() -> None:
    """A padded batch: a padded query of a bidirectional encoder sees no key at all (its pattern row is 0)."""
    model = make("bert-post-ln")
    toks = tokens(model, batch=2)
    padding = torch.ones(2, 11, dtype=torch.long)
    padding[1, 6:] = 0
    compact, kept = trace_both(model, toks, padding_mask=padding)
    assert_same(compact, kept)
    pattern = compact[1]["blocks.0.attn.hook_pattern"]
    assert float(pattern[1, :, :, 6:].abs().sum()) == 0  # no query looks at padding


def test_a_padded_query_that_sees_nothing_attends_nowhere() -> None:
    from model.head_math import blind_rows
    from model.transformer import attention_allowed

    padding = torch.tensor([[1, 1, 1], [0, 0, 0]])
    allowed = attention_allowed(3, 3, causal=False, window=None, key_padding=padding, device=torch.device("cpu"))
    assert allowed is not None
    blind = blind_rows(allowed)
    assert blind is not None and blind.shape[0] == 2 and blind.shape[-1] == 1  # broadcast over q_pos
    assert blind[1].all() and not blind[0].any()
    assert blind_rows(allowed) is blind  # worked out once per mask
    causal = attention_allowed(4, 4, causal=True, window=None, key_padding=None, device=torch.device("cpu"))
    assert causal is not None and blind_rows(causal) is None


def test_a_trace_with_edits_keeps_every_stage() -> None:
    """An edit may keep state of its own (the lab's capture lists): it runs once, in the one forward pass."""
    model = make("llama-gqa")
    toks = tokens(model)
    edits = Interventions(no_scale=True, ablate_heads=((0, 1),))  # edits on scores_scaled, z
    output, trace = model.run_with_trace(toks, edits=edits)
    assert not isinstance(trace, CompactTrace)
    assert "blocks.0.attn.hook_pattern" in trace.tensors
    plain, _ = model.run_with_trace(toks)
    assert float((output - plain).abs().max()) > 1e-4  # the edit changed the output
    _, empty = model.run_with_trace(toks, edits=Interventions())  # no edit at all: compact
    assert isinstance(empty, CompactTrace)


def test_a_cached_step_keeps_every_stage() -> None:
    """With a KV cache a block reads the cache as it was then: no compact trace (the cache has grown since)."""
    model = make("llama-gqa")
    toks = tokens(model)
    cache = KVCache()
    model.run_with_trace(toks[:, :7], cache=cache)
    cache_b = KVCache()
    model.run_with_trace(toks[:, :7], compact=False, cache=cache_b)
    compact = model.run_with_trace(toks[:, 7:], cache=cache)
    kept = model.run_with_trace(toks[:, 7:], compact=False, cache=cache_b)
    assert_same(compact, kept)
    assert not isinstance(compact[1], CompactTrace)


def test_threads_reading_one_trace_read_the_same_numbers() -> None:
    """The server's trace cache hands one trace to several threads: their reads of compact stages agree."""
    model = make("llama-gqa")
    _, trace = model.run_with_trace(tokens(model))
    _, kept = model.run_with_trace(tokens(model), compact=False)
    names = [name for name in trace if name not in trace.tensors]
    assert len(names) > 20
    failures: list[str] = []

    def read() -> None:
        for _ in range(5):
            for name in names:
                if not torch.allclose(trace[name], kept[name], rtol=0, atol=1e-6):
                    failures.append(name)

    threads = [threading.Thread(target=read) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures


def test_a_block_runs_again_once_for_all_its_stages(monkeypatch: pytest.MonkeyPatch) -> None:
    model = make("llama-gqa")
    _, trace = model.run_with_trace(tokens(model))
    assert isinstance(trace, CompactTrace)
    runs: list[str] = []
    block = model.stack.blocks[1]
    monkeypatch.setattr(type(block), "forward", counting(type(block).forward, runs))
    for name in trace:
        if name.startswith("blocks.1."):
            trace[name]
    assert len(runs) == 1  # one run of layer 1 for all its stages
    again = trace.block_stages("blocks.1.")
    held = {id(t): t.numel() * t.element_size() for t in [*trace.tensors.values(), *again.tensors.values()]}
    assert sum(held.values()) <= trace.nbytes()  # what the trace cache counts covers what it holds
    trace["blocks.0.attn.hook_q"]
    trace["blocks.1.attn.hook_q"]
    assert len(runs) == 3  # the last block read is kept, one at a time


def counting(forward, runs: list[str]):  # type: ignore[no-untyped-def]
    def wrapped(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        runs.append(self.stage_prefix)
        return forward(self, *args, **kwargs)
    return wrapped
