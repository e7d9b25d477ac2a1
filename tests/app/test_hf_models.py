"""Hugging Face-format directories served through --add-model match the reference implementation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from fastapi.testclient import TestClient

from app.catalogue import build_registry
from app.factory import create_app
from tests.app.conftest import make_settings, post

transformers = pytest.importorskip("transformers")


def gpt2_dir(path: Path) -> torch.nn.Module:
    torch.manual_seed(0)
    hf = transformers.GPT2LMHeadModel(transformers.GPT2Config(vocab_size=300, n_positions=64, n_embd=32, n_layer=2,
                                                              n_head=4)).eval()
    hf.save_pretrained(path, safe_serialization=True)
    # classic GPT-2 vocabulary files: byte-level symbols for all 256 bytes, then a few merges
    from model.tokenizer import _bytes_to_unicode

    symbols = list(_bytes_to_unicode().values())
    vocab = {s: i for i, s in enumerate(symbols)}
    merges = [("t", "h"), ("th", "e"), ("Ġ", "c")]
    for a, b in merges:
        vocab[a + b] = len(vocab)
    (path / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (path / "merges.txt").write_text("#version: 0.2\n" + "\n".join(f"{a} {b}" for a, b in merges), encoding="utf-8")
    return hf


def llama_dir(path: Path) -> torch.nn.Module:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=300, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    hf = transformers.LlamaForCausalLM(config).eval()
    hf.save_pretrained(path, safe_serialization=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(["the cat sat on the mat", "我爱北京"] * 5, trainer)
    tok.save(str(path / "tokenizer.json"))
    return hf


def bert_dir(path: Path) -> torch.nn.Module:
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=40, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=48, max_position_embeddings=64)
    hf = transformers.BertModel(config, add_pooling_layer=False).eval()
    hf.save_pretrained(path, safe_serialization=True)
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "我", "爱"]
    (path / "vocab.txt").write_text("\n".join(words + [f"w{i}" for i in range(40 - len(words))]), encoding="utf-8")
    return hf


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("hf")
    refs = {}
    for name, build in (("gpt2", gpt2_dir), ("llama", llama_dir), ("bert", bert_dir)):
        (tmp / name).mkdir()
        refs[name] = build(tmp / name)
    settings = make_settings(tmp, add_models=[f"hf-{name}={tmp / name}" for name in refs], default_model="hf-gpt2")
    registry = build_registry(settings)  # what `serve --add-model NAME=DIR` does
    with TestClient(create_app(settings, registry)) as client:
        yield client, registry, refs


@pytest.mark.parametrize("name", ["gpt2", "llama", "bert"])
def test_added_hf_models_match_the_reference(served, name: str) -> None:
    client, registry, refs = served
    text = "the cat sat on the mat"
    tokens = post(client, "/api/tokenize", {"model": f"hf-{name}", "text": text}).json()["tokens"]
    ids = torch.tensor([[t["id"] for t in tokens]])
    assert ids.shape[1] >= 3
    with torch.inference_mode():
        ours = registry.get(f"hf-{name}").model(ids)
        ref = refs[name](ids)
        expected = ref.last_hidden_state if name == "bert" else ref.logits
    assert (ours - expected).abs().max().item() <= 1e-4
    body = post(client, "/api/trace", {"model": f"hf-{name}", "text": text,
                                       "stages": ["blocks.1.attn.hook_pattern"], "top_k": 0}).json()
    pattern = torch.tensor(body["stages"]["blocks.1.attn.hook_pattern"]["data"], dtype=torch.float64)
    torch.testing.assert_close(pattern.nansum(-1), torch.ones(pattern.shape[:-1], dtype=torch.float64), atol=2e-3,
                               rtol=0)


def test_the_gpt2_vocab_files_tokenize_like_gpt2(served) -> None:
    client, _, _ = served
    tokens = post(client, "/api/tokenize", {"model": "hf-gpt2", "text": "the cat"}).json()["tokens"]
    assert [t["text"] for t in tokens] == ["the", " c", "a", "t"]
