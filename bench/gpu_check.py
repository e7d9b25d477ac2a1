"""The CUDA path, checked on a machine with an NVIDIA GPU: parity first, then the trace overhead.

    bash bench/gpu_check.sh          (or: python bench/gpu_check.py)

1. Parity: for decoder / encoder / encoder-decoder models with RoPE, ALiBi, GQA, the same weights give
   the same logits on CUDA as on the CPU (float32, max abs diff <= 1e-4); the traced attention pattern
   equals torch's scaled_dot_product_attention on CUDA; a random Hugging Face GPT-2 matches ours on CUDA.
2. Speed: plain forward against a full trace on CUDA (synchronised, median of --repeats), and the
   ratio, for a small model and the GPT-2-small shape.
3. A real LLM (--llm, default smollm2), when the server would register it: loaded by the project's own
   loader (the server's registry) on the CPU and on CUDA, the same text gives the same logits (max
   |CUDA - CPU| <= 1e-3 of the largest logit, float32), its attention rows sum to 1 on CUDA, and the trace
   cost on CUDA. Skipped, saying so, when no model of that name is registered in this checkout.
Exits non-zero on a parity failure; prints the numbers to record in docs/PERFORMANCE.md.
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

from checkpoints import LoadedModel  # noqa: E402
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
        target = ids[:, :10] if cfg.architecture == "encoder-decoder" else None
        on_gpu = None if target is None else target.cuda()
        with torch.inference_mode():
            expected = cpu(ids, target_tokens=target)
            got = gpu(ids.cuda(), target_tokens=on_gpu).cpu()
            _, trace = gpu.run_with_trace(ids[:1].cuda(), target_tokens=None if on_gpu is None else on_gpu[:1])
        diff = (got - expected).abs().max().item()
        rows = trace[next(n for n in trace if n.endswith("attn.hook_pattern"))].sum(-1)
        ok = diff <= 1e-4 and torch.allclose(rows, torch.ones_like(rows), atol=1e-5)
        print(f"parity {label:28s} max |cuda - cpu| {diff:.2e}  rows sum to 1: {ok}")
        if not ok:
            failures.append(label)
    return failures


def timed(fn, repeats: int, sync=torch.cuda.synchronize) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        fn()
        sync()
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


LLM_TEXT = ("The capital of France is Paris, and the capital of China is Beijing. "
            "我爱北京天安门广场。小明把书给了小红，因为她要复习。") * 4
LLM_RELATIVE_TOLERANCE = 1e-3  # of the largest |logit|: float32 over ~30 layers, CPU kernels against CUDA's


def registered(name: str, device: str) -> LoadedModel | None:
    """The model the server registers under this name, loaded by the server's own code on this device."""
    from app.catalogue import build_registry
    from app.settings import Settings

    registry = build_registry(Settings(device=device, load_minilm=False))
    return registry.get(name) if name in registry.names() else None


def llm(name: str, repeats: int, tokens: int, devices: tuple[str, str] = ("cpu", "cuda")) -> list[str]:
    """CPU-against-CUDA parity and the trace cost of a registered real model; [] when it passes or is absent."""
    reference = registered(name, devices[0])
    if reference is None:
        print(f"{name}: no model of this name is registered in this checkout: skipped")
        return []
    other = registered(name, devices[1])
    assert other is not None
    ids = torch.tensor([[token.id for token in reference.tokenizer.encode(LLM_TEXT)][:tokens]])  # [1, pos]
    with torch.inference_mode():
        expected = reference.model(ids).float()  # [1, pos, vocab]
        got = other.model(ids.to(devices[1])).float().cpu()
        _, trace = other.model.run_with_trace(ids.to(devices[1]), names=["blocks.*.attn.hook_pattern"])
    diff, scale = (got - expected).abs().max().item(), expected.abs().max().item()
    same_top = (got.argmax(-1) == expected.argmax(-1)).float().mean().item()
    rows = torch.stack([trace[n].sum(-1).float().cpu() for n in trace])
    rows_ok = torch.allclose(rows, torch.ones_like(rows), atol=1e-3)
    ok = diff <= LLM_RELATIVE_TOLERANCE * scale and rows_ok
    print(f"parity {name} ({ids.shape[1]} tokens) max |{devices[1]} - {devices[0]}| {diff:.2e} of max |logit| "
          f"{scale:.1f} ({diff / scale:.1e}; goal <= {LLM_RELATIVE_TOLERANCE:g}); same top-1 token at "
          f"{same_top:.1%} of positions; {len(rows)} layers' attention rows sum to 1: {rows_ok}")
    sync = torch.cuda.synchronize if devices[1].startswith("cuda") else (lambda: None)
    with torch.inference_mode():
        on_device = ids.to(devices[1])
        for _ in range(3):
            other.model(on_device)
            other.model.run_with_trace(on_device)
        plain = timed(functools.partial(other.model, on_device), repeats, sync)
        traced = timed(functools.partial(other.model.run_with_trace, on_device), repeats, sync)
    print(f"speed {name} on {devices[1]} ({ids.shape[1]} tokens) plain {plain * 1e3:7.2f} ms  full trace "
          f"{traced * 1e3:7.2f} ms  ratio {traced / plain:.2f}")
    return [] if ok else [name]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--llm", default="smollm2", help="a registered real model to check too (default smollm2)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA GPU here: nothing to check", file=sys.stderr)
        return 2
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    torch.backends.cuda.matmul.allow_tf32 = False  # parity in true float32 (TF32 rounds to 10 bits)
    torch.backends.cudnn.allow_tf32 = False
    failures = parity()
    speed(args.repeats, args.tokens)
    failures += llm(args.llm, args.repeats, args.tokens)
    if failures:
        print(f"PARITY FAILED: {', '.join(failures)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
