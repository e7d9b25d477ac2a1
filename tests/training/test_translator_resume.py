"""tiny-translator training resumes from its checkpoint exactly where an uninterrupted run would be."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file

import training.translate
from training.numbers import NumberTranslationTask
from training.translate import train

SMALL_MODEL = {"d_model": 16, "n_layers": 1, "n_decoder_layers": 1, "n_heads": 2, "d_mlp": 32}
STEPS, CHECKPOINT_INTERVAL, KILLED_AT = 6, 2, 4


class Killed(Exception):
    """Stands for the process dying between two checkpoints."""


@pytest.fixture
def restores_torch_threads() -> Iterator[None]:
    """train(threads=1) sets the process-wide thread count; later tests get theirs back."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def _train(out: Path, resume: bool = False) -> int:
    # one thread: a model this small only loses time to thread hand-offs on a busy CPU;
    # a high lr so that every step moves the weights
    return train(
        out,
        steps=STEPS,
        batch=4,
        lr=1e-2,
        seed=3,
        threads=1,
        resume=resume,
        checkpoint_interval=CHECKPOINT_INTERVAL,
        model_overrides=SMALL_MODEL,
    )


def _kill_before_saving_at(step: int, monkeypatch: pytest.MonkeyPatch) -> None:
    real_save = training.translate.save_training_state

    def save_or_die(*args: Any) -> None:
        if args[-1]["step"] == step:
            raise Killed
        real_save(*args)

    monkeypatch.setattr(training.translate, "save_training_state", save_or_die)


def _count_batches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    drawn: list[int] = []
    real_next_batch = NumberTranslationTask.next_batch

    def counting(self: NumberTranslationTask) -> dict[str, torch.Tensor]:
        drawn.append(1)
        return real_next_batch(self)

    monkeypatch.setattr(NumberTranslationTask, "next_batch", counting)
    return drawn


def _tensors(path: Path) -> dict[str, torch.Tensor]:
    return load_file(str(path))


@pytest.mark.usefixtures("restores_torch_threads")
def test_a_resumed_run_ends_with_the_weights_of_an_uninterrupted_one(tmp_path: Path) -> None:
    whole, interrupted = tmp_path / "whole", tmp_path / "interrupted"
    assert _train(whole) == 0

    with pytest.MonkeyPatch.context() as patch:
        _kill_before_saving_at(KILLED_AT, patch)
        with pytest.raises(Killed):
            _train(interrupted)
    saved = json.loads((interrupted / "checkpoint" / "state.json").read_text(encoding="utf-8"))
    assert saved["step"] == KILLED_AT - CHECKPOINT_INTERVAL  # steps 3 and 4 were lost with the process

    with pytest.MonkeyPatch.context() as patch:
        drawn = _count_batches(patch)
        assert _train(interrupted, resume=True) == 0
    assert len(drawn) == STEPS - saved["step"]  # it went on from the checkpoint, not from scratch

    # float32 training weights, not the float16 model, so that any difference shows
    weights = _tensors(whole / "checkpoint" / "weights.safetensors")
    resumed_weights = _tensors(interrupted / "checkpoint" / "weights.safetensors")
    assert weights.keys() == resumed_weights.keys()
    for name, tensor in weights.items():
        assert torch.equal(tensor, resumed_weights[name]), name
    moments = _tensors(whole / "checkpoint" / "optimizer.safetensors")
    resumed_moments = _tensors(interrupted / "checkpoint" / "optimizer.safetensors")
    for name, tensor in moments.items():
        assert torch.equal(tensor, resumed_moments[name]), name

    meta = json.loads((whole / "config.json").read_text(encoding="utf-8"))["meta"]
    resumed_meta = json.loads((interrupted / "config.json").read_text(encoding="utf-8"))["meta"]
    assert resumed_meta["history"] == meta["history"]
    assert resumed_meta["training"]["examples_seen"] == meta["training"]["examples_seen"] == STEPS * 4
    assert resumed_meta.keys() == meta.keys()
