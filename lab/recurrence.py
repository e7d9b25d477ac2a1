"""Recurrence against attention: a GRU language model run step by step beside a Transformer, on one sentence.

Both read the same tokens: the recurrent model (model/recurrent.py, model/weights/recurrent-gru) was
trained on the tokens of tiny-gpt and the pe-* family, on the same kind of rows as pe-rope, and the
Transformer beside it is one of those two shipped models (TRANSFORMERS), loaded from model/weights
whatever else the server offers. Three things are measured:

(a) Sequential steps. The GRU's hidden state h_t = GRU(x_t, h_{t-1}) needs h_{t-1}: N tokens are N
    steps, run here one after another as a Python loop (each step timed). The Transformer's blocks
    each read every position at once: its longest chain is its L blocks, each one matrix product
    over all N positions (each block timed, through edits on its input and output stream). Each
    time is the fastest of REPEATS runs, so another process's burst does not show as a slow step.
(b) Path length as influence. How much the hidden state at the last position N moves when the input
    embedding x_i of token i moves: the Jacobian's Frobenius norm

        influence(i) = ‖∂h_N / ∂x_i‖_F = sqrt(Σ_a Σ_e (∂h_N[a] / ∂x_i[e])²)

    (the expected gradient norm of a random direction u·h_N, u ~ N(0, I)). For the GRU the signal
    from x_i passes through N − i steps, each multiplying by a Jacobian ∂h_t/∂h_{t-1}, so it
    shrinks with distance (the vanishing gradient). For the Transformer, h_N is the last block's
    output stream (before the final norm), x_i is the token embedding (hook_embed), and attention
    reaches back in one step from any distance. Computed exactly: one forward pass, then one backward
    pass per dimension a of h_N, all at once (vmapped), each giving row a of the Jacobian.
(c) Next-token loss: each model's cross-entropy on every token of the sentence after the first.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from checkpoints import LoadedModel, load_checkpoint
from checkpoints.recurrent import SHIPPED, LoadedRecurrent, load_recurrent
from model.hooks import Trace, stage_name
from model.recurrent import RecurrentLM
from model.tokenizer import CharTokenizer, HubTokenizer
from model.transformer import Transformer

LastState = Callable[[torch.Tensor], torch.Tensor]  # inputs [batch, pos, d_in] -> the last state [batch, d_out]
Edit = Callable[[torch.Tensor, Trace], torch.Tensor]
MAX_TOKENS = 64  # the rows both models were trained on: the recurrent model has never run longer
REPEATS = 5  # each step and block is timed this many times and its fastest kept: a busy machine adds only delays
TRANSFORMERS = ("pe-rope", "tiny-gpt")  # shipped Transformers that read the recurrent model's tokens


@functools.cache
def shipped_recurrent() -> LoadedRecurrent:
    return load_recurrent(SHIPPED)


@functools.cache
def shipped_transformer(name: str) -> LoadedModel:
    """One of TRANSFORMERS, from the folder beside the recurrent model's (loaded once)."""
    if name not in TRANSFORMERS:
        raise ValueError(f"no shipped Transformer {name!r} reads the recurrent model's tokens: {TRANSFORMERS}")
    loaded = load_checkpoint(SHIPPED.parent / name)
    loaded.model.eval()
    return loaded


@dataclass(frozen=True)
class Recurrence:
    rnn_step_seconds: list[float]  # [pos] each step of the loop, which waited for the one before
    transformer_block_seconds: list[float]  # [layer] each block, over every position at once
    rnn_influence: torch.Tensor  # [pos] ‖∂h_N/∂x_i‖_F
    transformer_influence: torch.Tensor  # [pos]
    rnn_loss: torch.Tensor  # [pos - 1] nats, predicting token i + 1 at position i
    transformer_loss: torch.Tensor  # [pos - 1]


def same_tokens(a: CharTokenizer | HubTokenizer, b: CharTokenizer | HubTokenizer) -> bool:
    """Do two tokenizers cut text into the same ids (the same byte-level BPE vocabulary)?"""
    if not (isinstance(a, HubTokenizer) and isinstance(b, HubTokenizer)):
        return False
    return a.vocab_size == b.vocab_size and a.tokenizer.get_vocab() == b.tokenizer.get_vocab()


def jacobian_norms(inputs: torch.Tensor, last_state: LastState, d_out: int) -> torch.Tensor:
    """‖∂f(x)/∂x_i‖_F for every position i, where f = last_state maps [batch, pos, d_in] -> [batch, d_out].

    inputs: [pos, d_in]. One forward pass, then d_out backward passes at once (vmapped over the rows of the
    identity as output gradients): row a of the Jacobian [d_out, pos, d_in] is the gradient of f(x)[a]."""
    with torch.inference_mode(False), torch.enable_grad():
        x = inputs.detach().clone()[None].requires_grad_(True)  # [1, pos, d_in]
        out = last_state(x)[0]  # [d_out]
        rows = torch.eye(d_out, dtype=out.dtype, device=out.device)
        (jacobian,) = torch.autograd.grad(out, x, rows, is_grads_batched=True)  # [d_out, 1, pos, d_in]
    return jacobian.float().pow(2).sum((0, 1, 3)).sqrt()  # [pos]


def rnn_last_state(rnn: RecurrentLM) -> LastState:
    """x [batch, pos, d_embed] -> h_N [batch, d_hidden], through the step-by-step loop."""
    return lambda x: rnn.steps(x)[:, -1]


def transformer_last_state(model: Transformer, tokens: torch.Tensor) -> LastState:
    """x [batch, pos, d_model] in place of the token embeddings -> the last block's output at the last position."""
    embed, last = stage_name("embed"), stage_name("resid_post", model.cfg.n_layers - 1)

    def run(x: torch.Tensor) -> torch.Tensor:
        kept: list[torch.Tensor] = []

        def keep(value: torch.Tensor, _trace: Trace) -> torch.Tensor:
            kept.append(value)  # an edit sees the value with its graph (a trace records it detached)
            return value

        with Trace([], {embed: [lambda _value, _trace: x], last: [keep]}):
            model.stack_named(None)(tokens[None].expand(x.shape[0], -1))  # the stack only: no logits needed
        return kept[0][:, -1]  # [batch, d_model]

    return run


def timed_steps(rnn: RecurrentLM, x: torch.Tensor) -> tuple[torch.Tensor, list[float]]:
    """The loop of RecurrentLM.steps, each step timed: x [1, pos, d_embed] -> (h [1, pos, d_hidden], seconds)."""
    h = x.new_zeros(1, rnn.cfg.d_hidden)
    states, seconds = [], []
    for t in range(x.shape[1]):
        started = time.perf_counter()
        h = rnn.step(x[:, t], h)  # needs the h of step t - 1: no step can start before the last ends
        seconds.append(time.perf_counter() - started)
        states.append(h)
    return torch.stack(states, dim=1), seconds


def timed_blocks(model: Transformer, tokens: torch.Tensor) -> tuple[torch.Tensor, list[float]]:
    """One forward pass with each block timed from its input stream to its output stream -> (logits, seconds)."""
    starts: dict[int, float] = {}
    seconds: dict[int, float] = {}

    def started(layer: int) -> Edit:
        def edit(value: torch.Tensor, _trace: Trace) -> torch.Tensor:
            starts[layer] = time.perf_counter()
            return value
        return edit

    def ended(layer: int) -> Edit:
        def edit(value: torch.Tensor, _trace: Trace) -> torch.Tensor:
            seconds[layer] = time.perf_counter() - starts[layer]
            return value
        return edit

    edits: dict[str, list[Edit]] = {}
    for layer in range(model.cfg.n_layers):
        edits[stage_name("resid_pre", layer)] = [started(layer)]
        edits[stage_name("resid_post", layer)] = [ended(layer)]
    with torch.inference_mode(), Trace([], edits):
        logits = model(tokens[None])  # [1, pos, d_vocab]
    return logits, [seconds[layer] for layer in range(model.cfg.n_layers)]


# the reference sentences: the influence averaged over them by distance, so the curve a class reads is more than
# one sentence's (each sentence's own first words stand out: see the Shape a curve's words are chosen from)
REFERENCE = (
    "The animal didn't cross the street because it was too tired.",
    "The cat sat on the mat and looked at the birds in the garden.",
    "She opened the door, saw the rain, and went back to bed with a book.",
    "After the long meeting, the team decided to move the launch to next spring.",
    "A small boat drifted along the river while the children watched from the bridge.",
    "The teacher wrote the answer on the board, and every student copied it carefully.",
    "When the train finally arrived, the crowd on the platform pushed forward at once.",
    "My grandmother keeps her old letters in a wooden box under the bed.",
)
RISE = 1.5  # a curve "rises again" when its farthest third averages at least this many times its lowest point


@dataclass(frozen=True)
class Shape:
    """What an influence curve does with distance d = 1 … D (the start token left out), read off its numbers."""
    near: float  # d = 1
    low: float  # its smallest value
    low_at: int  # the distance of that value
    far: float  # the mean over the farthest third
    far_from: int
    far_to: int
    rises: bool  # lowest before the farthest third, which is at least RISE times higher: a U, not a decay


def curve_shape(by_distance: list[float]) -> Shape | None:
    """by_distance[d - 1]: the influence d tokens back, d = 1 … D; None when D < 3 (no near and far to compare)."""
    if len(by_distance) < 3:
        return None
    far_from = len(by_distance) - len(by_distance) // 3 + 1
    far = sum(by_distance[far_from - 1:]) / len(by_distance[far_from - 1:])
    low_at = min(range(len(by_distance)), key=by_distance.__getitem__) + 1
    low = by_distance[low_at - 1]
    return Shape(by_distance[0], low, low_at, far, far_from, len(by_distance), low_at < far_from and far >= RISE * low)


def by_distance(influence: torch.Tensor) -> list[float]:
    """[pos] influence of each token (position 0 the start token) -> [d - 1] for d = 1 … pos − 2."""
    return influence.flip(0)[1:-1].tolist()


@functools.cache
def reference_curve(rnn: RecurrentLM, sentences: tuple[tuple[int, ...], ...]) -> tuple[list[float], list[int]]:
    """The geometric mean over `sentences` (token ids) of the GRU's influence d tokens back, d = 1 … D (the start
    token left out), and how many sentences reach each d: ([D] influence, [D] counts)."""
    curves: list[list[float]] = []
    for ids in sentences:
        # d_hidden copies of the sentence through the fused nn.GRU (the same h_N as the step-by-step loop, in a
        # fraction of the time); copy a's gradient of h_N[a] is row a of the Jacobian
        with torch.inference_mode(False), torch.enable_grad():
            x = rnn.embed(torch.tensor(ids, device=rnn.device)[None]).detach()
            copies = x.expand(rnn.cfg.d_hidden, -1, -1).clone().requires_grad_(True)  # [d_hidden, pos, d_embed]
            (rows,) = torch.autograd.grad(rnn.gru(copies)[0][:, -1].diagonal().sum(), copies)
        curves.append(by_distance(rows.float().pow(2).sum((0, 2)).sqrt()))
    counts = [sum(len(c) > d for c in curves) for d in range(max(map(len, curves)))]
    return [math.exp(sum(math.log(c[d]) for c in curves if len(c) > d) / n) for d, n in enumerate(counts)], counts


def next_token_loss(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """logits [pos, d_vocab], tokens [pos] -> [pos - 1] nats of each next token."""
    return F.cross_entropy(logits[:-1].float(), tokens[1:], reduction="none")


def recurrence(rnn: RecurrentLM, model: Transformer, token_ids: list[int]) -> Recurrence:
    """All three measurements on one sentence (token ids, both models' vocabulary; 2 to MAX_TOKENS of them)."""
    if not 2 <= len(token_ids) <= MAX_TOKENS:
        raise ValueError(f"recurrence reads 2 to {MAX_TOKENS} tokens, not {len(token_ids)}")
    rnn_tokens = torch.tensor(token_ids, device=rnn.device)
    tokens = torch.tensor(token_ids, device=model.device)
    with torch.inference_mode():
        x = rnn.embed(rnn_tokens[None])  # [1, pos, d_embed]
        runs = [timed_steps(rnn, x) for _ in range(REPEATS)]
        hidden, step_seconds = runs[0][0], [min(times) for times in zip(*(t for _, t in runs), strict=True)]
        rnn_logits = rnn.unembed(hidden)[0]  # [pos, d_vocab]
    passes = [timed_blocks(model, tokens) for _ in range(REPEATS)]
    transformer_logits = passes[0][0]
    block_seconds = [min(times) for times in zip(*(t for _, t in passes), strict=True)]
    with torch.inference_mode():
        _, trace = model.run_with_trace(tokens[None], names=[stage_name("embed")])
        embedding = trace[stage_name("embed")][0].clone()  # [pos, d_model]
    return Recurrence(
        rnn_step_seconds=step_seconds,
        transformer_block_seconds=block_seconds,
        rnn_influence=jacobian_norms(x[0], rnn_last_state(rnn), rnn.cfg.d_hidden),
        transformer_influence=jacobian_norms(embedding, transformer_last_state(model, tokens), model.cfg.d_model),
        rnn_loss=next_token_loss(rnn_logits, rnn_tokens),
        transformer_loss=next_token_loss(transformer_logits[0], tokens),
    )
