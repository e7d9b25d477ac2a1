"""Training reproduces the shipped models' figures, and `transformer-explorer train` trains and resumes."""

from __future__ import annotations

import argparse
import json

import pytest

from checkpoints import load_checkpoint
from tests.conftest import CORPUS

# ---------------------------------------------------------------- the shipped models, measured again


def test_tiny_gpt_reaches_its_recorded_validation_loss(tiny_gpt):
    if not CORPUS.is_dir():
        pytest.skip(f"the training corpus is not at {CORPUS} (CI and developer machines have it there)")
    from training.corpus import BOS, load_corpus, validation_loss, validation_windows

    meta = tiny_gpt.meta
    corpus = load_corpus([CORPUS])
    windows = validation_windows(
        tiny_gpt.tokenizer,
        corpus,
        meta["val_sample"]["tokens_per_window"],
        tiny_gpt.tokenizer.token_id(BOS),
        meta["val_sample"]["windows"],
    )
    loss = validation_loss(tiny_gpt.model, windows)["all"]
    assert loss == pytest.approx(meta["val_loss"], rel=0.02)
    assert loss < 6.0  # far below chance: ln(vocab) = 8.9 for 7,071 tokens


def test_translator_exact_match_on_fresh_numbers(translator):
    from training.translate import exact_match, translate

    result = exact_match(translator.model, translator.tokenizer, n=200, seed=31337)
    assert result["all"] >= 0.9, result
    assert translate(translator.model, translator.tokenizer, 2026, "en") == "two thousand twenty-six"


# ---------------------------------------------------------------- the train command


def _train(args: list[str]) -> int:
    from training.train import add_arguments, main

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return main(parser.parse_args(args))


def test_train_command_loss_goes_down_and_resumes(tmp_path):
    if not CORPUS.is_dir():
        pytest.skip(f"the training corpus is not at {CORPUS}")
    out = tmp_path / "run"
    common = [
        str(CORPUS),
        "--config",
        "tiny-test",
        "--out",
        str(out),
        "--max-chars",
        "20000",
        "--vocab-size",
        "300",
        "--batch-size",
        "8",
        "--lr",
        "1e-2",
        "--warmup",
        "2",
        "--eval-interval",
        "5",
        "--checkpoint-interval",
        "10",
        "--snapshot-steps",
        "5",
        "--no-progress",
        "--device",
        "cpu",
    ]
    from transformer_explorer.cli import main as cli

    assert cli(["train", *common, "--steps", "10"]) == 0  # the installed command's entry point
    assert _train(common + ["--steps", "20", "--resume"]) == 0
    meta = json.loads((out / "model" / "config.json").read_text(encoding="utf-8"))["meta"]
    history = meta["history"]
    assert [h["step"] for h in history] == [5, 10, 15, 20]
    assert history[-1]["val_loss"] < history[0]["val_loss"]
    assert meta["training"]["steps"] == 20 and meta["training"]["tokens_seen"] == 20 * 8 * 63
    assert (out / "model" / "snapshots" / "step-000005.safetensors").is_file()
    assert [seg["from_step"] for seg in meta["sampling"]["schedule"]] == [0, 10]
    loaded = load_checkpoint(out / "model")
    assert loaded.model.cfg.n_layers == 2
    assert loaded.meta["val_loss"] == pytest.approx(history[-1]["val_loss"], abs=0.05)
