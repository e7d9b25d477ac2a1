"""Bad or unsupported GGUF files are refused with a message that names the problem."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from checkpoints import CheckpointError, load_checkpoint
from checkpoints.gguf import inspect_gguf
from tests.checkpoints.gguf_files import gguf, tiny_hf, write_gguf

F32 = "F32"


def bad_files(root: Path) -> dict[str, tuple[Path, str]]:
    """name -> (file, a fragment its refusal must contain). Also used by tests/app/test_registry_cli.py."""
    root.mkdir(parents=True, exist_ok=True)
    hf = tiny_hf("llama")
    f32 = gguf.GGMLQuantizationType.F32

    def written(name: str, arch: str = "llama", **kwargs: Any) -> Path:
        path = root / f"{name}.gguf"
        write_gguf(path, hf, arch, f32, **kwargs)
        return path

    good = written("good")
    (root / "not-gguf.gguf").write_text("these are not the bytes you are looking for")
    (root / "truncated.gguf").write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    q8k = np.zeros((1, gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType.Q8_K][1]), dtype=np.uint8)
    cases: dict[str, tuple[Path, str]] = {
        "not a GGUF": (root / "not-gguf.gguf", "is not a GGUF file"),
        "truncated": (root / "truncated.gguf", "(truncated?)"),
        "architecture": (written("phi2", arch="phi2"), "unsupported architecture general.architecture = 'phi2'"),
        "quantization": (written("q8k", add={"blk.0.extra.weight": (q8k, gguf.GGMLQuantizationType.Q8_K)}),
                         "stored as Q8_K, which the gguf package cannot dequantize"),
        "RoPE scaling": (written("rope", extra={"llama.rope.scaling.type": "yarn"}),
                         "llama.rope.scaling.type = 'yarn' (RoPE scaling) is not implemented"),
        "sliding window": (written("swa", extra={"llama.attention.sliding_window": 4}),
                           "llama.attention.sliding_window = 4 (sliding-window attention)"),
        "soft-capping": (written("cap", extra={"llama.final_logit_softcapping": 30.0}),
                         "llama.final_logit_softcapping = 30.0 (final logit soft-capping) is not implemented"),
        "experts": (written("moe", extra={"llama.expert_count": 8}), "llama.expert_count = 8 (mixture of experts)"),
        "partial rotary": (written("rotary", extra={"llama.rope.dimension_count": 8}),
                           "llama.rope.dimension_count = 8, but the head size is 16: partial rotary"),
        "logit scale": (written("scale", extra={"llama.logit_scale": 0.5}), "llama.logit_scale = 0.5"),
        "unknown key": (written("unknown", extra={"llama.new_idea": 3}), "llama.new_idea = 3"),
        "shapes": (written("shapes", extra={"llama.feed_forward_length": 128}),
                   "tensor 'blk.0.ffn_gate.weight' has shape [96, 64], but the metadata (embedding_length 64, "
                   "feed_forward_length 128) says [128, 64]"),
        "unused tensor": (written("qnorm", add={"blk.0.attn_q_norm.weight": (np.ones(16, dtype=np.float32), None)}),
                          "(refused rather than ignored): blk.0.attn_q_norm.weight (a norm on each head's q: "
                          "read for qwen3 and gemma3 files only)"),
        "missing tensor": (written("missing", skip=("blk.1.ffn_up.weight",)), "no tensor 'blk.1.ffn_up.weight'"),
    }
    return cases


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    return bad_files(tmp_path_factory.mktemp("bad-gguf"))


CASES = ["not a GGUF", "truncated", "architecture", "quantization", "RoPE scaling", "sliding window", "soft-capping",
         "experts", "partial rotary", "logit scale", "unknown key", "shapes", "unused tensor", "missing tensor"]


@pytest.mark.parametrize("case", CASES)
def test_bad_file_is_refused_naming_the_problem(cases: dict[str, tuple[Path, str]], case: str) -> None:
    path, fragment = cases[case]
    with pytest.raises(CheckpointError) as error:
        load_checkpoint(path)
    assert fragment in str(error.value)


@pytest.mark.parametrize("case", ["architecture", "quantization", "RoPE scaling", "truncated", "not a GGUF"])
def test_inspect_refuses_without_loading(cases: dict[str, tuple[Path, str]], case: str) -> None:
    path, fragment = cases[case]
    with pytest.raises(CheckpointError) as error:
        inspect_gguf(path)
    assert fragment in str(error.value)


def test_good_file_loads_and_inspects(cases: dict[str, tuple[Path, str]]) -> None:
    good = cases["RoPE scaling"][0].parent / "good.gguf"
    assert inspect_gguf(good)["architecture"] == "llama"
    assert load_checkpoint(good).model.cfg.n_layers == 2
