"""Loaders return facts; app/model_words.py words them (static/text/<lang>.json `models`), and the registry gives
every model that arrives its description in English and Chinese, as GET /api/models showed them before."""

from __future__ import annotations

import json
from pathlib import Path

from app.model_words import describe, word_meta
from app.registry import Registry
from checkpoints import load_checkpoint, pretrained
from tests.checkpoints.gguf_files import gguf, tiny_hf, write_gguf

ROOT = Path(__file__).resolve().parents[2]


def test_the_wording_lives_in_the_text_files_in_both_languages() -> None:
    en, zh = (json.loads((ROOT / "static" / "text" / f"{lang}.json").read_text(encoding="utf-8"))["models"]
              for lang in ("en", "zh"))
    assert set(en) == set(zh) >= {"gguf_file", "context_cut", "precision_note", "package_minilm", "package_smollm2"}
    # no loader holds a learner sentence any more
    for module in ("checkpoints/gguf_metadata.py", "checkpoints/pretrained.py"):
        source = (ROOT / module).read_text(encoding="utf-8")
        assert '"description' not in source, f"{module} writes a description"
        assert not any("\u4e00" <= ch <= "\u9fff" for ch in source), f"{module} holds Chinese words"


def test_a_gguf_files_facts_are_worded_when_the_registry_takes_it(tmp_path: Path) -> None:
    path = tmp_path / "tiny.gguf"
    write_gguf(path, tiny_hf("llama", tied=True), "llama", gguf.GGMLQuantizationType.Q8_0)
    loaded = load_checkpoint(path)
    facts = dict(loaded.meta)
    assert "description" not in facts and facts["file_name"] == "tiny.gguf" and facts["gguf_architecture"] == "llama"
    registry = Registry()
    registry.add("tiny", loaded)
    en, zh = loaded.meta["description"], loaded.meta["description_zh"]
    assert registry.description("tiny") == en
    assert en.startswith("tiny: a llama GGUF file (tiny.gguf), dequantized to float32 (tensors: ")
    assert "Q8_0" in en and "llama.cpp" in en  # quantized: the note says why llama.cpp's numbers differ
    assert zh.startswith("tiny：一个 llama 结构的 GGUF 文件（tiny.gguf）") and "llama.cpp" in zh
    assert {k: v for k, v in loaded.meta.items() if not k.startswith("description")} == facts  # facts unchanged


def test_a_float32_file_has_no_precision_note_and_a_long_context_says_its_cut() -> None:
    meta = {"gguf_architecture": "qwen2", "file_name": "q.gguf", "tensor_types": {"F32": 9}, "context_length": 32768,
            "context_cap": 8192}
    en = describe(meta, "en")
    assert "llama.cpp" not in en and en.endswith("reads at most 8192 of them (n_ctx), to keep its RoPE tables small.")
    assert describe(meta, "zh").endswith("本服务器最多只读取其中 8192 个（n_ctx），以免 RoPE 表过大。")


def test_package_models_and_worded_models() -> None:
    assert describe(pretrained.SMOLLM2_META, "en").startswith("SmolLM2-135M-Instruct: a pretrained 30-layer")
    assert "llama.cpp" in describe(pretrained.SMOLLM2_META, "en")  # its file is Q4_1
    assert "llama.cpp" not in describe(pretrained.MINILM_META, "zh")
    own = {"description": "a trained model's own words", "tensor_types": {"Q8_0": 1}, "gguf_architecture": "llama"}
    assert word_meta(dict(own)) == own  # a meta that holds a description keeps it
    assert word_meta({"source": "huggingface"}) == {"source": "huggingface"}  # nothing to word
