"""A TestClient on an app whose registry holds tiny seeded models of each architecture.

- `gpt`: decoder, RoPE, GQA (4 query heads, 2 K/V heads), RMSNorm, SwiGLU, char tokenizer with a BOS
- `bert`: encoder, learned positions, Post-LN, segment embeddings, no LM head, byte-level BPE
- `translator`: encoder-decoder, sinusoidal positions, char tokenizer with `<s>` as start and end
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from app.factory import create_app
from app.registry import Registry
from app.settings import Settings
from app.tensors import decode_tensor
from checkpoints import LoadedModel
from model.config import TransformerConfig
from model.tokenizer import CharTokenizer, HubTokenizer
from model.transformer import Transformer

BOS = "<|endoftext|>"


def byte_bpe() -> HubTokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(["the cat sat on the mat", "我爱北京天安门广场", "hello world"] * 5, trainer)
    return HubTokenizer(tok, "bpe")


def tiny_models() -> dict[str, LoadedModel]:
    gpt_tok = CharTokenizer(specials=(BOS,))
    gpt = TransformerConfig(architecture="decoder", vocab_size=gpt_tok.vocab_size, d_model=32, n_layers=2, n_heads=4,
                            n_kv_heads=2, n_ctx=64, pos_encoding="rope", norm="rmsnorm", activation="swiglu",
                            bias=False, seed=1)
    bert_tok = byte_bpe()
    bert = TransformerConfig(architecture="encoder", vocab_size=bert_tok.vocab_size, d_model=32, n_layers=2,
                             n_heads=2, n_ctx=64, pos_encoding="learned", norm_placement="post", final_norm=False,
                             lm_head=False, n_token_types=2, embed_norm=True, seed=2)
    tr_tok = CharTokenizer(specials=("<s>",))
    translator = TransformerConfig(architecture="encoder-decoder", vocab_size=tr_tok.vocab_size, d_model=32,
                                   n_layers=2, n_decoder_layers=1, n_heads=4, n_ctx=64, pos_encoding="sinusoidal",
                                   seed=3)
    return {
        "gpt": LoadedModel(Transformer(gpt).eval(), gpt_tok,
                           {"description": "tiny decoder", "bos_token": BOS, "eos_token": BOS, "head_labels": {}}),
        "bert": LoadedModel(Transformer(bert).eval(), bert_tok, {"description": "tiny encoder"}),
        "translator": LoadedModel(Transformer(translator).eval(), tr_tok,
                                  {"description": "tiny translator", "bos_token": "<s>", "eos_token": "<s>"}),
    }


def make_settings(tmp: Path, **changes: object) -> Settings:
    base: dict[str, object] = {"load_minilm": False, "load_smollm2": False, "weights_dir": tmp / "no-weights",
                               "default_model": "gpt", "workers": 2, "queue_size": 8, "max_tokens": 48,
                               "data_dir": tmp / "data"}
    return Settings(**{**base, **changes})


def make_registry(default: str = "gpt") -> Registry:
    registry = Registry(default=default)
    for name, loaded in tiny_models().items():
        registry.add(name, loaded, source="test")
    return registry


@pytest.fixture(scope="session")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    app = create_app(make_settings(tmp_path_factory.mktemp("app")), make_registry())
    with TestClient(app) as test_client:
        yield test_client


def post(client: TestClient, path: str, body: dict[str, object]):  # noqa: ANN201
    """POST JSON written with ASCII escapes, so lone surrogates ("\\ud800") travel as JSON allows."""
    return client.post(path, content=json.dumps(body), headers={"content-type": "application/json"})


def error_of(response) -> tuple[int, str, str]:  # noqa: ANN001, ANN201
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) <= {"code", "message", "details"}, body
    assert "details" not in body["error"] or isinstance(body["error"]["details"].get("reason"), str), body
    return response.status_code, body["error"]["code"], body["error"]["message"]


def trace_logits(client: TestClient, body: dict[str, object]) -> np.ndarray:
    """The model's own logits [pos, d_vocab] from /api/trace at full float32 precision."""
    out = post(client, "/api/trace", {**body, "stages": ["hook_logits"], "encoding": "base64"}).json()
    return decode_tensor(out["stages"]["hook_logits"]).astype(np.float64)


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)
