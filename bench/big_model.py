"""A 3B-shaped model on a small machine: the server's memory and its first view, file precision against float32.

    python bench/big_model.py [--shape 3b|1b|8b|qwen35-0.8b] [--float32 auto|yes|no] [--keep DIR]

Writes a synthetic GGUF of the shape (Llama 3.2 3B by default: d_model 3072, 28 layers, 24 heads, 8 K/V heads,
d_head 128, d_mlp 8192, vocab 128256, tied embeddings) with random weights, every matrix Q8_0, to a temp dir,
tensor by tensor (the writer holds one tensor at a time: the header first, then each tensor's blocks), and starts
`serve --add-model big=FILE` on it, once with the default float32 budget (the model keeps its file's precision:
memory-mapped Q8_0 blocks, dequantized a matrix at a time) and once with a budget that holds it as float32 (as
before), when `free` says the float32 copy fits with room to spare (`--float32 auto`). For each it prints:
- the server's RSS over a baseline (the same server without the big model) once the model is open, and after
  the first view;
- the time of the first view of a 24-token sentence (POST /api/trace, its first request: one full forward pass
  with every stage recorded) and of a second sentence;
- the CPU seconds the server spent on each view (on a busy machine, close to what the view takes alone on one
  core: the server gives a request one torch thread), the load time, and the load average of the machine.
Issue 32's targets, on the 2-core machine: 3B file precision: RSS <= 4 GB over the baseline, first view <= 30 s.
For the 8B shape (d_model 4096, 32 layers, 32/8 heads, d_mlp 14336, vocab 128256, untied) it prints the memory on
paper, and `--shape 8b` opens it for real (8.5 GB of disk). `--shape qwen35-0.8b` writes a Qwen3.5 hybrid (GGUF
qwen35) in Qwen3.5-0.8B's text shape (24 layers, 18 gated DeltaNet, 6 gated attention, vocab 248320; 0.75 B
parameters), which issue 43 holds to the same budget. The files are deleted afterwards (unless --keep).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.load import free_port  # noqa: E402
from model.tokenizer import _bytes_to_unicode  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
Q8_0_BLOCK, Q8_0_BYTES = 32, 34  # 32 weights: a float16 scale and 32 int8
GOAL_RSS_GB, GOAL_VIEW_S = 4.0, 30.0
# 24 tokens with the file's byte-level tokenizer (one token per character: the vocabulary has no merges)
SENTENCE = "The cat sat on the mats."
SECOND = "A dog ran in the parks!!"


@dataclass(frozen=True)
class Shape:
    d_model: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    d_mlp: int
    vocab: int
    tied: bool

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    def matrices(self) -> list[tuple[str, tuple[int, int]]]:
        """(GGUF name, torch shape [out, in]) of every matrix, in the order llama.cpp writes them."""
        d, kv = self.d_model, self.n_kv_heads * self.d_head
        out = [("token_embd.weight", (self.vocab, d))]
        for layer in range(self.n_layers):
            blk = f"blk.{layer}."
            out += [(blk + "attn_q.weight", (d, d)), (blk + "attn_k.weight", (kv, d)), (blk + "attn_v.weight", (kv, d)),
                    (blk + "attn_output.weight", (d, d)), (blk + "ffn_gate.weight", (self.d_mlp, d)),
                    (blk + "ffn_up.weight", (self.d_mlp, d)), (blk + "ffn_down.weight", (d, self.d_mlp))]
        if not self.tied:
            out.append(("output.weight", (self.vocab, d)))
        return out

    def vectors(self) -> list[tuple[str, tuple[int, ...], str]]:
        """(GGUF name, shape, what it holds) of every float32 tensor: here the RMSNorm gains."""
        norms = [f"blk.{i}.{n}_norm.weight" for i in range(self.n_layers) for n in ("attn", "ffn")]
        return [(name, (self.d_model,), "gain") for name in ("output_norm.weight", *norms)]

    def metadata(self) -> dict[str, object]:
        return {"block_count": self.n_layers, "context_length": 8192, "embedding_length": self.d_model,
                "feed_forward_length": self.d_mlp, "attention.head_count": self.n_heads,
                "attention.head_count_kv": self.n_kv_heads, "rope.freq_base": 500000.0,
                "rope.dimension_count": self.d_head, "attention.layer_norm_rms_epsilon": 1e-5}

    arch = "llama"

    def parameters(self) -> int:
        return sum(rows * cols for _, (rows, cols) in self.matrices()) + \
            sum(int(np.prod(size)) for _, size, _ in self.vectors())

    def q8_0_bytes(self) -> int:
        return sum(rows * cols // Q8_0_BLOCK * Q8_0_BYTES for _, (rows, cols) in self.matrices()) + \
            4 * sum(int(np.prod(size)) for _, size, _ in self.vectors())


@dataclass(frozen=True)
class Qwen35Shape(Shape):
    """A Qwen3.5 hybrid as llama.cpp writes it (GGUF qwen35, checkpoints/families/qwen35.py): every
    `interval`-th layer gated full attention (attn_q holds query and gate), the others gated DeltaNet."""
    head_dim: int = 256
    key_heads: int = 16  # DeltaNet: ssm.group_count key heads of ssm.state_size
    value_heads: int = 16  # ssm.time_step_rank value heads of value_dim (ssm.inner_size in all)
    key_dim: int = 128
    value_dim: int = 128
    conv: int = 4
    interval: int = 4

    arch = "qwen35"

    @property
    def d_head(self) -> int:
        return self.head_dim

    def is_deltanet(self, layer: int) -> bool:
        return (layer + 1) % self.interval != 0

    def matrices(self) -> list[tuple[str, tuple[int, int]]]:
        d, q, kv = self.d_model, self.n_heads * self.head_dim, self.n_kv_heads * self.head_dim
        values, conv = self.value_heads * self.value_dim, 2 * self.key_heads * self.key_dim + \
            self.value_heads * self.value_dim
        out = [("token_embd.weight", (self.vocab, d))]
        for layer in range(self.n_layers):
            blk = f"blk.{layer}."
            if self.is_deltanet(layer):
                out += [(blk + "attn_qkv.weight", (conv, d)), (blk + "attn_gate.weight", (values, d)),
                        (blk + "ssm_alpha.weight", (self.value_heads, d)),
                        (blk + "ssm_beta.weight", (self.value_heads, d)), (blk + "ssm_out.weight", (d, values))]
            else:
                out += [(blk + "attn_q.weight", (2 * q, d)), (blk + "attn_k.weight", (kv, d)),
                        (blk + "attn_v.weight", (kv, d)), (blk + "attn_output.weight", (d, q))]
            out += [(blk + "ffn_gate.weight", (self.d_mlp, d)), (blk + "ffn_up.weight", (self.d_mlp, d)),
                    (blk + "ffn_down.weight", (d, self.d_mlp))]
        return out + ([] if self.tied else [("output.weight", (self.vocab, d))])

    def vectors(self) -> list[tuple[str, tuple[int, ...], str]]:
        conv = 2 * self.key_heads * self.key_dim + self.value_heads * self.value_dim
        out: list[tuple[str, tuple[int, ...], str]] = [("output_norm.weight", (self.d_model,), "gain")]
        for layer in range(self.n_layers):
            blk = f"blk.{layer}."
            out += [(blk + "attn_norm.weight", (self.d_model,), "gain"),
                    (blk + "post_attention_norm.weight", (self.d_model,), "gain")]
            if self.is_deltanet(layer):  # the convolution [channels, kernel] stays float32, as llama.cpp keeps it
                out += [(blk + "ssm_conv1d.weight", (conv, self.conv), "conv"),
                        (blk + "ssm_a", (self.value_heads,), "decay"),
                        (blk + "ssm_dt.bias", (self.value_heads,), "gain"),
                        (blk + "ssm_norm.weight", (self.value_dim,), "gain")]
            else:
                out += [(blk + f"attn_{n}_norm.weight", (self.head_dim,), "gain") for n in ("q", "k")]
        return out

    def metadata(self) -> dict[str, object]:
        return {"block_count": self.n_layers, "context_length": 8192, "embedding_length": self.d_model,
                "feed_forward_length": self.d_mlp, "attention.head_count": self.n_heads,
                "attention.head_count_kv": self.n_kv_heads, "attention.key_length": self.head_dim,
                "attention.value_length": self.head_dim, "rope.freq_base": 10_000_000.0,
                "rope.dimension_count": self.head_dim // 4, "attention.layer_norm_rms_epsilon": 1e-6,
                "full_attention_interval": self.interval, "ssm.conv_kernel": self.conv,
                "ssm.state_size": self.key_dim, "ssm.group_count": self.key_heads,
                "ssm.time_step_rank": self.value_heads, "ssm.inner_size": self.value_heads * self.value_dim}


SHAPES = {
    "tiny": Shape(256, 2, 4, 2, 512, 4096, tied=True),  # a smoke test of the bench itself (seconds)
    "1b": Shape(2048, 16, 32, 8, 8192, 128256, tied=True),  # Llama 3.2 1B
    "3b": Shape(3072, 28, 24, 8, 8192, 128256, tied=True),  # Llama 3.2 3B
    "8b": Shape(4096, 32, 32, 8, 14336, 128256, tied=False),  # Llama 3.1 8B
    # Qwen3.5-0.8B's text model (its model card): 24 layers, 6 x (3 gated DeltaNet + 1 gated attention)
    "qwen35-0.8b": Qwen35Shape(1024, 24, 8, 2, 3584, 248320, tied=True),
    "qwen35-tiny": Qwen35Shape(256, 4, 4, 2, 512, 4096, tied=True, head_dim=64, key_heads=2, value_heads=4,
                               key_dim=32, value_dim=32),  # a smoke test of the bench itself
}


def q8_0_blocks(rows: int, cols: int, rng: np.random.Generator) -> np.ndarray:
    """Random Q8_0 rows [rows, cols / 32 * 34]: weights of standard deviation ~0.02 (a scale of 0.02 / 74 on
    uniform int8), as quantizing random float32 would give, without holding the float32 copy."""
    blocks = np.empty((rows, cols // Q8_0_BLOCK, Q8_0_BYTES), dtype=np.uint8)
    blocks[..., :2] = np.full((1, 1, 1), 0.02 / 74, dtype=np.float16).view(np.uint8).reshape(1, 1, 2)
    blocks[..., 2:] = np.frombuffer(rng.bytes(rows * cols), dtype=np.uint8).reshape(rows, cols // Q8_0_BLOCK, 32)
    return blocks.reshape(rows, -1)


def vector(kind: str, size: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """A float32 tensor: a gain near 1, a DeltaNet decay ssm_a = −exp(A_log) < 0, or a convolution's filters."""
    if kind == "decay":
        return -np.exp(rng.uniform(-1.0, 1.0, size)).astype(np.float32)
    if kind == "conv":
        return (0.3 * rng.standard_normal(size)).astype(np.float32)
    return (1.0 + 0.1 * rng.standard_normal(size)).astype(np.float32)


def write_file(path: Path, shape: Shape) -> None:
    """The GGUF, one tensor in memory at a time (the largest: the embedding, 0.4-0.5 GB of blocks)."""
    import gguf

    writer = gguf.GGUFWriter(str(path), shape.arch)
    for key, value in shape.metadata().items():
        writer.add_key_value(f"{shape.arch}.{key}", value, gguf.GGUFValueType.UINT32 if isinstance(value, int)
                             else gguf.GGUFValueType.FLOAT32)
    writer.add_vocab_size(shape.vocab)
    tokens = list(_bytes_to_unicode().values())  # the 256 bytes: one token per character
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("llama-bpe" if shape.arch == "llama" else "qwen2")
    writer.add_token_list(tokens)
    writer.add_token_types([1] * len(tokens))
    writer.add_token_merges([])
    writer.add_add_bos_token(False)
    q8 = gguf.GGMLQuantizationType.Q8_0
    matrices = shape.matrices()
    for name, (rows, cols) in matrices:
        writer.add_tensor_info(name, (rows, cols * Q8_0_BYTES // Q8_0_BLOCK), np.dtype(np.uint8),
                               rows * cols // Q8_0_BLOCK * Q8_0_BYTES, raw_dtype=q8)
    for name, size, _ in shape.vectors():
        writer.add_tensor_info(name, size, np.dtype(np.float32), 4 * int(np.prod(size)))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    rng = np.random.default_rng(0)
    for _, (rows, cols) in matrices:
        writer.write_tensor_data(q8_0_blocks(rows, cols, rng))
    for _, size, kind in shape.vectors():
        writer.write_tensor_data(vector(kind, size, rng))
    writer.close()


def rss_gb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 2**20
    raise RuntimeError("no VmRSS")


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system) the process has used: on a busy machine, what its work would take alone."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def available_gb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 2**20
    return 0.0


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def serve(port: int, path: Path | None, float32_budget_mb: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "transformer_explorer", "serve", "--port", str(port), "--no-minilm",
               "--no-smollm2", "--log-level", "warning", *(["--add-model", f"big={path}"] if path else [])]
    env = {**os.environ, "TE_FLOAT32_BUDGET_MB": str(float32_budget_mb), "TE_LOAD_WAIT_S": "1"}
    server = subprocess.Popen(command, cwd=ROOT, start_new_session=True, env=env)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=2).status_code == 200:
                return server
        except httpx.HTTPError:
            time.sleep(0.3)
    stop(server)
    raise RuntimeError("the server did not start")


def stop(server: subprocess.Popen[bytes]) -> None:
    os.killpg(server.pid, signal.SIGTERM)
    server.wait(timeout=60)


def baseline_gb() -> float:
    port = free_port()
    server = serve(port, None, 3072)
    try:
        time.sleep(3)
        return rss_gb(server.pid)
    finally:
        stop(server)


def measure(path: Path, float32_budget_mb: int, base: float) -> dict[str, object]:
    port = free_port()
    began = time.monotonic()
    server = serve(port, path, float32_budget_mb)
    out: dict[str, object] = {}
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=600) as client:
            progress = []
            while True:  # a float32 load happens at startup; a file-precision one in the background, with progress
                health = client.get("/api/health").json()
                if "big" in health["loaded"]:
                    break
                if "big" not in health["models"]:
                    raise RuntimeError(f"the model was refused: {health['refused']}")
                progress += [m["percent"] for m in health.get("loading", [])]
                time.sleep(0.5)
            out["load_s"] = time.monotonic() - began
            out["progress_seen"] = sorted(set(progress))[:3] + (["..."] if len(set(progress)) > 3 else [])
            out["rss_open_gb"] = rss_gb(server.pid) - base
            tokens = client.post("/api/tokenize", json={"model": "big", "text": SENTENCE}).json()["tokens"]
            out["tokens"] = len(tokens)
            for key, text in (("first_view", SENTENCE), ("second_view", SECOND)):
                start, cpu = time.perf_counter(), cpu_s(server.pid)
                client.post("/api/trace", json={"model": "big", "text": text}).raise_for_status()
                out[f"{key}_s"] = round(time.perf_counter() - start, 1)
                out[f"{key}_cpu_s"] = round(cpu_s(server.pid) - cpu, 1)  # the server's CPU time for it
            out["rss_viewed_gb"] = rss_gb(server.pid) - base
            out["meta"] = client.get("/api/models/big").json()["meta"].get("weights_in_memory")
    finally:
        stop(server)
    out["load_average"] = load_average()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", choices=sorted(SHAPES), default="3b")
    parser.add_argument("--float32", choices=["auto", "yes", "no"], default="auto")
    parser.add_argument("--keep", type=Path, help="write the file here and keep it")
    args = parser.parse_args()
    shape = SHAPES[args.shape]
    for name, each in SHAPES.items():
        layer_matrix = max(r * c for n, (r, c) in each.matrices() if n.startswith("blk."))
        print(f"{name}: {each.parameters() / 1e9:.2f} B parameters: float32 {each.parameters() * 4 / 2**30:.1f} GiB; "
              f"file precision: Q8_0 {each.q8_0_bytes() / 2**30:.2f} GiB memory-mapped, plus while a pass runs one "
              f"float32 matrix at a time ({layer_matrix * 4 / 2**20:.0f} MiB at most; the unembedding in chunks of "
              f"256 MiB), per inference worker")
    print(f"load average before: {load_average()}; memory available: {available_gb():.1f} GiB")
    directory = args.keep or Path(tempfile.mkdtemp(prefix="big-model-"))
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"synthetic-{args.shape}.Q8_0.gguf"
    try:
        if not path.exists():
            began = time.monotonic()
            write_file(path, shape)
            print(f"wrote {path} ({path.stat().st_size / 2**30:.2f} GiB) in {time.monotonic() - began:.0f} s")
        base = baseline_gb()
        print(f"baseline server RSS (no big model): {base:.2f} GiB")
        float32_gb = shape.parameters() * 4 / 2**30
        # the server's default budget (3072 MB) holds a model that fits as float32; below it, the file's precision
        file_budget = 3072 if float32_gb * 1024 > 3072 else 256
        if file_budget != 3072:
            print(f"{float32_gb:.2f} GiB as float32 fits the server's default float32 budget (3072 MB), which holds "
                  f"it so; the file precision run lowers the budget to {file_budget} MB")
        runs = [("file precision", file_budget)]
        if args.float32 == "yes" or (args.float32 == "auto" and available_gb() > 1.5 * float32_gb + 3):
            runs.append(("float32", 10**6))
        else:
            print(f"float32 path skipped: it needs {float32_gb:.1f} GiB and {available_gb():.1f} GiB are available")
        for label, budget in runs:
            result = measure(path, budget, base)
            print(f"{args.shape} {label}: {result}")
        if args.shape in ("3b", "qwen35-0.8b"):
            print(f"targets: RSS over baseline <= {GOAL_RSS_GB} GB once open, first view <= {GOAL_VIEW_S} s")
    finally:
        if args.keep is None:
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
