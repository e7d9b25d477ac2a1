"""What a quantized file's precision does to the next-token distribution, and why llama.cpp's numbers differ.

This project dequantizes a GGUF file's weights to float32 once and computes everything in float32. llama.cpp
keeps the weights quantized and, for a matrix product with quantized weights, first rounds the activations
it multiplies them with to 8-bit blocks (Q8_0 / Q8_1):

    blocks of 32 values;  d = max|x| / 127;  q = round(x / d) in [-127, 127];  x ≈ q · d  (d kept as float16)

F16 and BF16 weights see their activations rounded to that type instead; F32 weights see them as they are.
This module emulates that rounding (not llama.cpp's kernels) with trace edits on the inputs of the linear
layers: in a Pre-LN block those inputs are stages of their own (the norms' outputs, z, the FFN's hidden
vector), each read by one group of matrices only, so rounding them changes nothing else. It also re-quantizes
the float32 weights to a coarser type (quantize → dequantize, the arithmetic of gguf.quants, tested equal to
it), to show what a smaller file would do, and compares every run with the float32 one:

    KL_p = Σ_t p_t (log p_t − log q_t)       (p: float32 run, q: the other run, at position p)
    top-1 agreement = share of positions whose most likely next token is the same
    weight error = ‖W' − W‖ / ‖W‖            (relative RMS)

On the CPU, llama.cpp rounds the activations of K-quant and i-quant weights to blocks of 256 (Q8_K), not 32;
the emulation uses 32 for every quantized type (what its GPU kernels use).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import cast

import torch
import torch.nn.functional as F

from checkpoints.base import CheckpointError
from lab.ggml_rounding import HALF_TYPES, Rounding, requantized, rounded
from model.hooks import Edit, Trace, stage_name
from model.layers import MLP, Block, Norm
from model.transformer import Transformer

FLOAT_TYPES = frozenset({"F32", "F64"})  # weights llama.cpp multiplies with unrounded float32 activations

GROUPS = ("attn_in", "attn_out", "mlp_in", "mlp_out")  # a block's linear layers, grouped by the input they share
# GGUF tensor (its name after `blk.N.`) -> the group of linear layers whose input it multiplies
GGUF_GROUPS = {"attn_q.weight": "attn_in", "attn_k.weight": "attn_in", "attn_v.weight": "attn_in",
               "attn_qkv.weight": "attn_in", "attn_output.weight": "attn_out", "ffn_gate.weight": "mlp_in",
               "ffn_up.weight": "mlp_in", "ffn_down.weight": "mlp_out"}


class NotEmulated(ValueError):
    """A model this emulation cannot follow (the message says why)."""


# ---------------------------------------------------------------- which inputs llama.cpp rounds


@dataclass(frozen=True)
class Plan:
    """How llama.cpp would round the input of each group of linear layers (None: not at all)."""

    layers: list[dict[str, Rounding | None]]  # [layer] group -> rounding
    unembed: Rounding | None
    from_file: bool  # read from the GGUF file's tensor types (False: every weight treated as quantized)
    types: dict[str, int] = field(default_factory=dict)  # the file's tensor types and their counts

    @property
    def rounded_inputs(self) -> int:
        return sum(kind is not None for row in self.layers for kind in row.values()) + (self.unembed is not None)


def rounding_of(types: set[str], where: str) -> Rounding | None:
    """The rounding a group of weights of these storage types gets; refuses a group whose weights differ."""
    kinds = {None if t in FLOAT_TYPES else cast(Rounding, t) if t in HALF_TYPES else "q8" for t in types}
    if len(kinds) > 1:
        raise NotEmulated(f"the weights of {where} are stored as {', '.join(sorted(types))}: llama.cpp rounds "
                          "their shared input differently for each, which this emulation does not follow")
    return kinds.pop() if kinds else None


def check_emulated(model: Transformer) -> None:
    """Refuse, saying why, a model whose linear-layer inputs are not stages of their own."""
    cfg = model.cfg
    if cfg.architecture != "decoder" or not cfg.lm_head:
        raise NotEmulated("this compares next-token predictions, so it needs a decoder that writes text (an "
                          "encoder or an encoder-decoder is not emulated)")
    if cfg.n_experts:
        raise NotEmulated("this model routes each token to a few experts: llama.cpp rounds each expert's input "
                          "apart, and the experts' inputs are no stages of their own, so this emulation does not "
                          "follow them")
    if cfg.norm_placement == "post":
        raise NotEmulated("this model is Post-LN: its attention reads the un-normalised stream, which also carries "
                          "on past the block, so rounding that input would round the stream itself")


def gguf_path(meta: Mapping[str, object]) -> Path | None:
    """The GGUF file a model was loaded from (checkpoints/gguf_metadata.py's meta), or None (a native or Hugging
    Face checkpoint)."""
    if "gguf_architecture" not in meta:
        return None
    path = meta.get("path") or str(meta.get("source", "")).removeprefix("gguf:")
    return Path(str(path)) if path else None


@lru_cache(maxsize=8)
def _storage_types(path: Path, size: int, modified: int) -> dict[str, str]:
    """tensor name -> its storage type, from the file's header (checked again as at loading; seconds on a large
    file, so kept per file, its size and time: a file changed on disk is read again)."""
    from checkpoints.gguf import open_reader

    return {tensor.name: tensor.tensor_type.name for tensor in open_reader(path).tensors}


def file_plan(model: Transformer, path: Path) -> Plan:
    """Each group's rounding from the storage types of the GGUF file's tensors (its header; no weight is read)."""
    cfg = model.cfg
    try:
        stat = path.stat()
    except OSError as error:
        raise CheckpointError(f"{path.name} cannot be read: {error}") from error
    types = dict(_storage_types(path, stat.st_size, stat.st_mtime_ns))
    counts = dict(Counter(types.values()))
    groups: list[dict[str, set[str]]] = [{g: set() for g in GROUPS} for _ in range(cfg.n_layers)]
    for name, kind in types.items():
        if name.startswith("blk.") and name.count(".") >= 2:
            _, layer, rest = name.split(".", 2)
            if rest in GGUF_GROUPS:
                groups[int(layer)][GGUF_GROUPS[rest]].add(kind)
            elif rest.endswith(".weight") and kind not in FLOAT_TYPES and kind not in HALF_TYPES:
                raise NotEmulated(f"the file's tensor {name} is quantized ({kind}) but is no linear layer this "
                                  "emulation knows")
    unembed_tensor = "output.weight" if "output.weight" in types else "token_embd.weight"
    layers = [{g: rounding_of(kinds, f"layer {layer}") for g, kinds in row.items()}
              for layer, row in enumerate(groups)]
    return Plan(layers, rounding_of({types[unembed_tensor]}, "the unembedding"), True, counts)


def model_plan(model: Transformer, meta: Mapping[str, object]) -> Plan:
    """From the GGUF file when the model came from one; otherwise every linear layer as if its weights were
    quantized (a float32 checkpoint has no storage type to read)."""
    check_emulated(model)
    path = gguf_path(meta)
    if path is not None:
        try:
            return file_plan(model, path)
        except CheckpointError as error:
            raise NotEmulated(f"its GGUF file cannot be read again: {error}") from error
    groups: dict[str, Rounding | None] = dict.fromkeys(GROUPS, "q8")
    return Plan([dict(groups) for _ in range(model.cfg.n_layers)], "q8", False)


# ---------------------------------------------------------------- the edits


def input_stages(model: Transformer, layer: int) -> dict[str, str]:
    """group -> the stage that holds its input (a Pre-LN block: each is read by that group alone)."""
    return {"attn_in": stage_name("ln1.normalized", layer), "attn_out": stage_name("z", layer),
            "mlp_in": stage_name("ln2.normalized", layer), "mlp_out": stage_name("post", layer)}


def unembed_stage(model: Transformer) -> str:
    last = model.cfg.n_layers - 1
    return stage_name("ln_final.normalized") if model.cfg.final_norm else stage_name("resid_post", last)


def normed(norm: Norm, x: torch.Tensor) -> torch.Tensor:
    """norm(x) by its formula, without its hook points (it runs inside another stage's edit)."""
    if norm.kind == "layernorm":
        centered = x - x.mean(-1, keepdim=True)
        return centered / (centered.pow(2).mean(-1, keepdim=True) + norm.eps).sqrt() * norm.w + norm.b
    return x / (x.pow(2).mean(-1, keepdim=True) + norm.eps).sqrt() * norm.w


def rounding_edit(kind: Rounding, flatten: bool) -> Edit:
    """Round a stage in place of the input it is: z [batch, pos, head, d_head] is rounded as the
    [batch, pos, head · d_head] vector W_O multiplies."""
    def edit(value: torch.Tensor, _: Trace) -> torch.Tensor:
        return rounded(value.flatten(-2), kind).view_as(value) if flatten else rounded(value, kind)

    return edit


def activation_edits(model: Transformer, plan: Plan) -> dict[str, list[Edit]]:
    edits: dict[str, list[Edit]] = {}
    for layer, row in enumerate(plan.layers):
        for group, stage in input_stages(model, layer).items():
            kind = row[group]
            if kind is not None:
                edits[stage] = [rounding_edit(kind, group == "attn_out")]
    if plan.unembed is not None:
        edits[unembed_stage(model)] = [rounding_edit(plan.unembed, False)]
    return edits


@dataclass
class WeightErrors:
    """The relative RMS error of the re-quantized weights: per layer, its attention and FFN matrices together."""

    attention: list[float]
    ffn: list[float]
    unembedding: float = 0.0
    embedding: float | None = None  # None: tied to the unembedding (one matrix)
    _sums: dict[str, list[float]] = field(default_factory=dict)

    def add(self, key: str, new: torch.Tensor, old: torch.Tensor) -> None:
        """Accumulate ‖new − old‖² and ‖old‖² under key ("attention.3", "ffn.0", "unembedding", "embedding")."""
        sums = self._sums.setdefault(key, [0.0, 0.0])
        sums[0] += float((new - old).pow(2).sum(dtype=torch.float64))  # float32 values, summed in float64
        sums[1] += float(old.pow(2).sum(dtype=torch.float64))

    def finish(self) -> None:
        def ratio(key: str) -> float:
            error, norm = self._sums.get(key, [0.0, 0.0])
            return (error / norm) ** 0.5 if norm else 0.0

        self.attention = [ratio(f"attention.{layer}") for layer in range(len(self.attention))]
        self.ffn = [ratio(f"ffn.{layer}") for layer in range(len(self.ffn))]
        self.unembedding = ratio("unembedding")
        if "embedding" in self._sums:
            self.embedding = ratio("embedding")


def requant_edits(model: Transformer, kind: str, errors: WeightErrors) -> tuple[dict[str, list[Edit]], set[str]]:
    """Edits that replace each linear layer's output by the same product with its weight re-quantized (and the
    token embeddings by rows of the re-quantized table), and the stages they read. The weights are
    re-quantized as the forward pass reaches them and dropped after, so a copy of the model is never held."""
    cfg = model.cfg
    stack = model.stack_named(None)
    edits: dict[str, list[Edit]] = {}
    needed: set[str] = {stage_name("tokens")}

    def product(linear: torch.nn.Linear, source: str, key: str, heads: int | None = None,
                post: Norm | None = None) -> Edit:
        """linear's output from its input stage, with its weight re-quantized: [batch, pos, out] (split into
        [batch, pos, head, d_head] for Q, K and V; z read as the [batch, pos, head · d_head] W_O multiplies);
        then the norm after the sub-layer, `post`, where the model has one (Gemma), as the stage holds it."""
        def edit(_: torch.Tensor, trace: Trace) -> torch.Tensor:
            weight = requantized(linear.weight, kind)
            errors.add(key, weight, linear.weight)
            x = trace[source]
            out = F.linear(x.flatten(-2) if x.dim() == 4 else x, weight, linear.bias)
            if post is not None:
                out = normed(post, out)
            return out if heads is None else out.unflatten(-1, (heads, cfg.d_head))

        return edit

    for layer, block in enumerate(cast(Sequence[Block], list(stack.blocks))):
        attn, mlp = block.attn, cast(MLP, block.mlp)  # check_emulated refused a mixture of experts
        inputs = input_stages(model, layer)
        needed.update(inputs.values())
        attention, ffn = f"attention.{layer}", f"ffn.{layer}"
        for stage, linear, heads in (("q", attn.W_Q, cfg.n_heads), ("k", attn.W_K, cfg.kv_heads),
                                     ("v", attn.W_V, cfg.kv_heads)):
            edits[stage_name(stage, layer)] = [product(linear, inputs["attn_in"], attention, heads)]
        post_attn, post_mlp = (block.ln1_post, block.ln2_post) if block.post_norms else (None, None)
        edits[stage_name("attn_out", layer)] = [product(attn.W_O, inputs["attn_out"], attention, post=post_attn)]
        if mlp.gated:
            edits[stage_name("pre", layer)] = [product(mlp.W_gate, inputs["mlp_in"], ffn)]
            edits[stage_name("up", layer)] = [product(mlp.W_in, inputs["mlp_in"], ffn)]
        else:
            edits[stage_name("pre", layer)] = [product(mlp.W_in, inputs["mlp_in"], ffn)]
        edits[stage_name("mlp_out", layer)] = [product(mlp.W_out, inputs["mlp_out"], ffn, post=post_mlp)]
    unembed = unembed_stage(model)
    needed.add(unembed)
    # W_U's output: the logits, or what the soft cap then bends (Gemma 2), which the model still applies
    logits = stage_name("logits_raw" if cfg.logit_softcap is not None else "logits")
    edits[logits] = [product(cast(torch.nn.Linear, model.W_U), unembed, "unembedding")]
    embed_scale = math.sqrt(cfg.d_model) if cfg.scale_embeddings else 1.0  # the stage holds the scaled rows (Gemma)
    if not cfg.tied_embeddings:  # a tied table is the unembedding's: its error is counted there
        embedding = stack.embed.W_E.weight

        def embed_edit(_: torch.Tensor, trace: Trace) -> torch.Tensor:
            table = requantized(embedding, kind)
            errors.add("embedding", table, embedding)
            return F.embedding(trace[stage_name("tokens")], table) * embed_scale

        edits[stage_name("embed")] = [embed_edit]
    else:
        def tied_embed_edit(_: torch.Tensor, trace: Trace) -> torch.Tensor:
            rows = trace[stage_name("tokens")]  # [batch, pos]: re-quantize just the rows the text uses
            return requantized(stack.embed.W_E.weight[rows.flatten()], kind).view(*rows.shape, -1) * embed_scale

        edits[stage_name("embed")] = [tied_embed_edit]
    return edits, needed


# ---------------------------------------------------------------- the comparison


@dataclass(frozen=True)
class Comparison:
    """One run against the float32 run, position by position."""

    kl: list[float]  # [pos] KL(float32 ‖ this run) of the next-token distributions, in nats
    agree: list[bool]  # [pos] the same most likely next token
    probabilities: torch.Tensor  # [d_vocab] this run's next-token probabilities at the last position

    @property
    def mean_kl(self) -> float:
        return sum(self.kl) / len(self.kl)

    @property
    def agreement(self) -> float:
        return sum(self.agree) / len(self.agree)


def compare(reference: torch.Tensor, logits: torch.Tensor) -> Comparison:
    """reference, logits: [pos, d_vocab] of the float32 run and another run of the same text."""
    log_p = reference.double().log_softmax(-1)
    log_q = logits.double().log_softmax(-1)
    kl = (log_p.exp() * (log_p - log_q)).sum(-1).clamp_min(0.0)  # [pos]; rounding can give −1e-17
    agree = reference.argmax(-1) == logits.argmax(-1)
    return Comparison(kl.tolist(), agree.tolist(), log_q[-1].exp())


@dataclass(frozen=True)
class Quantization:
    reference: torch.Tensor  # [d_vocab] the float32 run's next-token probabilities at the last position
    activations: Comparison | None  # activations rounded as llama.cpp does (None: not asked)
    requant: Comparison | None  # weights re-quantized (None: not asked)
    weight_errors: WeightErrors | None
    forwards: int


def forwards_needed(activations: bool, requant: str | None) -> int:
    """Forward passes one comparison runs: the float32 run and one per variant."""
    return 1 + int(activations) + int(requant is not None)


@torch.inference_mode()
def quantization(model: Transformer, tokens: torch.Tensor, plan: Plan, *, activations: bool = True,
                 requant: str | None = None, reference: torch.Tensor | None = None) -> Quantization:
    """tokens: [1, pos]. reference: the float32 run's logits [1, pos, d_vocab] when already computed."""
    check_emulated(model)  # (an unknown `requant` type: requantized's ValueError, at the first layer)
    if reference is None:
        reference = model(tokens)
    base = reference[0]  # [pos, d_vocab]
    rounded_run = None
    if activations:
        with Trace((), activation_edits(model, plan)):
            rounded_run = compare(base, model(tokens)[0])
    requant_run, errors = None, None
    if requant is not None:
        n = model.cfg.n_layers
        errors = WeightErrors([0.0] * n, [0.0] * n)
        edits, needed = requant_edits(model, requant, errors)
        with Trace(needed, edits):
            requant_run = compare(base, model(tokens)[0])
        errors.finish()
    return Quantization(base[-1].double().softmax(-1), rounded_run, requant_run, errors,
                        forwards_needed(activations, requant))
