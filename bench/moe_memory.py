"""A mixture of experts of Qwen3-30B-A3B's layer shape from a GGUF file: memory kept, and experts dequantized only
when a token is routed to them.

    python bench/moe_memory.py [--layers 4] [--keep DIR]

Writes a synthetic qwen3moe GGUF (Qwen3-30B-A3B's layer: d_model 2048, 32 query / 4 K/V heads of 128, 128 experts
of width 768, 8 chosen; random weights, every matrix Q8_0, the experts as llama.cpp stores them, one 3-D tensor per
matrix and layer) with `--layers` of its 48 layers and a byte vocabulary, opens it in this process with the default
float32 budget (over it: the file's precision, memory-mapped) and prints:
- the process's anonymous memory (RssAnon: what it holds itself, not the file's pages the kernel may drop) before
  the load, once the model is open, and at its peak during a traced pass of a 24-token sentence;
- how many expert matrices that pass dequantized (the tokens' chosen experts) of how many the file holds, and the
  float32 bytes all experts would take.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.big_model import Q8_0_BLOCK, Q8_0_BYTES, q8_0_blocks  # noqa: E402
from model.tokenizer import _bytes_to_unicode  # noqa: E402

D_MODEL, HEADS, KV_HEADS, D_HEAD, EXPERTS, USED, WIDTH = 2048, 32, 4, 128, 128, 8, 768
SENTENCE = "The cat sat on the mats."  # 24 tokens: one per character (the vocabulary has no merges)


def matrices(layers: int) -> list[tuple[str, tuple[int, ...]]]:
    """(GGUF name, torch shape) of every Q8_0 tensor."""
    out: list[tuple[str, tuple[int, ...]]] = [("token_embd.weight", (256, D_MODEL))]
    for layer in range(layers):
        blk = f"blk.{layer}."
        out += [(blk + "attn_q.weight", (HEADS * D_HEAD, D_MODEL)),
                (blk + "attn_k.weight", (KV_HEADS * D_HEAD, D_MODEL)),
                (blk + "attn_v.weight", (KV_HEADS * D_HEAD, D_MODEL)),
                (blk + "attn_output.weight", (D_MODEL, HEADS * D_HEAD)),
                (blk + "ffn_gate_inp.weight", (EXPERTS, D_MODEL)),
                (blk + "ffn_gate_exps.weight", (EXPERTS, WIDTH, D_MODEL)),
                (blk + "ffn_up_exps.weight", (EXPERTS, WIDTH, D_MODEL)),
                (blk + "ffn_down_exps.weight", (EXPERTS, D_MODEL, WIDTH))]
    return out


def vectors(layers: int) -> list[tuple[str, int]]:
    out = [("output_norm.weight", D_MODEL)]
    for layer in range(layers):
        blk = f"blk.{layer}."
        out += [(blk + "attn_norm.weight", D_MODEL), (blk + "ffn_norm.weight", D_MODEL),
                (blk + "attn_q_norm.weight", D_HEAD), (blk + "attn_k_norm.weight", D_HEAD)]
    return out


def write_file(path: Path, layers: int) -> None:
    import gguf

    writer = gguf.GGUFWriter(str(path), "qwen3moe")
    for key, value in (("block_count", layers), ("context_length", 4096), ("embedding_length", D_MODEL),
                       ("feed_forward_length", 6144), ("attention.head_count", HEADS),
                       ("attention.head_count_kv", KV_HEADS), ("attention.key_length", D_HEAD),
                       ("attention.value_length", D_HEAD), ("expert_count", EXPERTS), ("expert_used_count", USED),
                       ("expert_feed_forward_length", WIDTH)):
        writer.add_uint32(f"qwen3moe.{key}", value)
    writer.add_float32("qwen3moe.rope.freq_base", 1e6)
    writer.add_float32("qwen3moe.attention.layer_norm_rms_epsilon", 1e-6)
    tokens = list(_bytes_to_unicode().values())
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list(tokens)
    writer.add_token_types([1] * len(tokens))
    writer.add_token_merges([])
    writer.add_add_bos_token(False)
    q8 = gguf.GGMLQuantizationType.Q8_0
    for name, shape in matrices(layers):
        rows = int(np.prod(shape[:-1]))
        writer.add_tensor_info(name, (*shape[:-1], shape[-1] * Q8_0_BYTES // Q8_0_BLOCK), np.dtype(np.uint8),
                               rows * shape[-1] // Q8_0_BLOCK * Q8_0_BYTES, raw_dtype=q8)
    for name, size in vectors(layers):
        writer.add_tensor_info(name, (size,), np.dtype(np.float32), 4 * size)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    rng = np.random.default_rng(0)
    for _, shape in matrices(layers):
        blocks = q8_0_blocks(int(np.prod(shape[:-1])), shape[-1], rng)
        writer.write_tensor_data(blocks.reshape(*shape[:-1], -1))
    for _, size in vectors(layers):
        writer.write_tensor_data((1.0 + 0.1 * rng.standard_normal(size)).astype(np.float32))
    writer.close()


def anon_gb() -> tuple[float, float]:
    """(RssAnon, VmHWM) of this process in GB: its own memory now, and the peak of its whole RSS."""
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return int(status["RssAnon"].split()[0]) / 2**20, int(status["VmHWM"].split()[0]) / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--keep", type=Path, default=None)
    args = parser.parse_args()
    import torch

    from checkpoints import load_checkpoint
    from model.stored_weights import PartSource

    folder = args.keep or Path(tempfile.mkdtemp(prefix="moe-memory-"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"qwen3moe-{args.layers}-layers-Q8_0.gguf"
    try:
        started = time.perf_counter()
        if not path.exists():
            write_file(path, args.layers)
        print(f"file: {path.stat().st_size / 2**30:.2f} GB ({args.layers} layers of 48), written in "
              f"{time.perf_counter() - started:.0f} s")
        before, _ = anon_gb()
        started = time.perf_counter()
        model = load_checkpoint(path).model
        opened, _ = anon_gb()
        print(f"open: {time.perf_counter() - started:.0f} s; RssAnon {before:.2f} GB before, {opened:.2f} GB open "
              f"(+{opened - before:.2f})")
        read: list[int] = []
        original = PartSource.rows

        def counted(self: PartSource, index: torch.Tensor | None) -> torch.Tensor:
            read.append(self.index)
            return original(self, index)

        PartSource.rows = counted  # type: ignore[method-assign]
        tokens = torch.tensor([[b for b in SENTENCE.encode()]])
        started = time.perf_counter()
        _, trace = model.run_with_trace(tokens)
        peak_now, _ = anon_gb()
        routed = sum(int((trace[f"blocks.{layer}.mlp.hook_expert_weights"][0] != 0).any(0).sum())
                     for layer in range(args.layers))
        all_experts = 3 * EXPERTS * args.layers
        float32 = all_experts * WIDTH * D_MODEL * 4 / 2**30
        print(f"traced pass of {tokens.shape[1]} tokens: {time.perf_counter() - started:.1f} s, RssAnon after "
              f"{peak_now:.2f} GB; {len(read)} expert matrices dequantized = 3 x {routed} experts routed to "
              f"(of {all_experts} in the file; all experts as float32: {float32:.1f} GB)")
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
