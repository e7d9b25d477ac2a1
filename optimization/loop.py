"""The one train loop. A task supplies batches and the loss; the loop does the optimizer steps.

A `Task` is pluggable: language modelling on the corpus (`training.language_modelling`), number
translation (`training.numbers`) and the norm-placement lab's byte windows (`lab.norm_placement`)
all train through `train_loop`. The caller picks the optimizer: `adamw` for training/, plain
Adam with a constant learning rate and no clipping for the lab (its point is no warm-up).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any, Protocol

import torch

from model.transformer import Transformer, distinct_parameters


class Task(Protocol):
    """What the loop needs to know about a training task."""

    fused_attention: bool  # run training steps through PyTorch's fused attention kernel

    def next_batch(self) -> Any:
        """The next batch of training data (on the CPU; `loss` moves it to the model's device)."""
        ...

    def loss(self, model: Any, batch: Any) -> torch.Tensor:
        """The scalar loss of the model (a Transformer, or model/recurrent.py's RNN) on a batch."""
        ...


def adamw(
    model: Transformer,
    *,
    lr: float,
    betas: tuple[float, float],
    weight_decay: float,
    decay_vectors_and_embeddings: bool,
) -> torch.optim.AdamW:
    """AdamW over every parameter once (a tied unembedding is its embedding).

    decay_vectors_and_embeddings False: norms, biases and the token embedding get no weight decay.
    """
    parameters = distinct_parameters(model)
    if decay_vectors_and_embeddings:
        return torch.optim.AdamW([p for _, p in parameters], lr=lr, betas=betas, weight_decay=weight_decay)
    decayed = [p for name, p in parameters if p.dim() >= 2 and "W_E" not in name]
    not_decayed = [p for name, p in parameters if p.dim() < 2 or "W_E" in name]
    groups = [{"params": decayed, "weight_decay": weight_decay}, {"params": not_decayed, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=betas)


def train_loop(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    task: Task,
    *,
    state: dict[str, Any],
    total_steps: int,
    lr_at: Callable[[int], float],
    after_step: Callable[[int, float], None],
    clip_norm: float | None = 1.0,
) -> None:
    """Optimizer steps from state["step"] to total_steps.

    lr_at(step): the learning rate of step `step` (1 = the first). After each step, state["step"]
    and state["train_seconds"] (time in the steps themselves) are updated and after_step(step,
    loss) runs: logging, evaluation and checkpoints belong there. clip_norm: the gradient's largest
    global norm before each step (None: not clipped).
    """
    model.train()
    while state["step"] < total_steps:
        step = state["step"] + 1
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step)
        started = time.time()
        batch = task.next_batch()
        fused = (model.fused_attention() if task.fused_attention and isinstance(model, Transformer)
                 else contextlib.nullcontext())
        with fused:
            loss = task.loss(model, batch)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
        if clip_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
        optimizer.step()
        state["step"] = step
        state["train_seconds"] = state.get("train_seconds", 0.0) + time.time() - started
        after_step(step, float(loss.detach()))
