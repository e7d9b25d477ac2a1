"""Models and helpers for the teaching tests (test_teaching.py: stage texts; test_lessons.py: chapters).

The shipped checkpoints (model/weights), inline configs that cover architecture × norm placement ×
positional encoding (with MHA/GQA/MQA, SwiGLU/GeGLU/GELU/ReLU, sliding window, √d_model scaling), and a
Hugging Face directory as a user adds one: a 30-layer Llama with RMSNorm, RoPE, SwiGLU and GQA 9/3.
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from app.catalogue import add_directory, add_minilm
from checkpoints import LoadedModel
from model.config import TransformerConfig
from model.tokenizer import CharTokenizer
from model.transformer import Transformer
from tests.browser.models import CHARS, ServerThread
from tests.conftest import free_port

SHIPPED = [
    "tiny-gpt",
    "tiny-translator",
    "minilm",
    "pe-alibi",
    "pe-learned",
    "pe-none",
    "pe-rope",
    "pe-rope-window",
    "pe-sinusoidal",
]
# a rendered text never shows these: a missing value, a failed lookup, an unfilled placeholder
BROKEN = re.compile(r"⟦|\bnull\b|\bundefined\b|\bNaN\b|\{\w+\}")

CONFIGS: dict[str, dict[str, Any]] = {
    # Post-LN LayerNorm, learned positions, GELU, MHA with biases
    "cfg-post-learned-gelu-mha": dict(
        architecture="decoder",
        d_model=32,
        n_layers=2,
        n_heads=4,
        norm="layernorm",
        norm_placement="post",
        pos_encoding="learned",
        activation="gelu",
        bias=True,
    ),
    # Pre-LN RMSNorm, ALiBi, ReLU, MQA, sliding window, no bias
    "cfg-pre-alibi-relu-mqa-window": dict(
        architecture="decoder",
        d_model=32,
        n_layers=2,
        n_heads=4,
        n_kv_heads=1,
        norm="rmsnorm",
        pos_encoding="alibi",
        activation="relu",
        bias=False,
        sliding_window=3,
    ),
    # Post-LN RMSNorm, RoPE, SwiGLU, GQA
    "cfg-post-rope-swiglu-gqa": dict(
        architecture="decoder",
        d_model=32,
        n_layers=2,
        n_heads=4,
        n_kv_heads=2,
        norm="rmsnorm",
        norm_placement="post",
        pos_encoding="rope",
        activation="swiglu",
        bias=False,
        d_mlp=48,
    ),
    # encoder-decoder, sinusoidal, GELU (tanh), √d_model scaling, no bias, Pre-LN
    "cfg-encdec-sinusoidal-scaled": dict(
        architecture="encoder-decoder",
        d_model=32,
        n_layers=1,
        n_decoder_layers=2,
        n_heads=2,
        pos_encoding="sinusoidal",
        activation="gelu_tanh",
        bias=False,
        scale_embeddings=True,
    ),
    # encoder-only, Pre-LN RMSNorm, RoPE, GELU
    "cfg-encoder-pre-rope": dict(
        architecture="encoder",
        d_model=32,
        n_layers=1,
        n_heads=4,
        norm="rmsnorm",
        pos_encoding="rope",
        activation="gelu",
        lm_head=False,
    ),
    # encoder-decoder, Post-LN LayerNorm, learned positions, ReLU, GQA
    "cfg-encdec-post-learned-gqa": dict(
        architecture="encoder-decoder",
        d_model=32,
        n_layers=1,
        n_decoder_layers=1,
        n_heads=4,
        n_kv_heads=2,
        norm_placement="post",
        pos_encoding="learned",
        activation="relu",
    ),
    # decoder-only, Pre-LN LayerNorm, sinusoidal, GELU, MHA with biases
    "cfg-pre-sinusoidal-gelu": dict(
        architecture="decoder",
        d_model=32,
        n_layers=2,
        n_heads=4,
        pos_encoding="sinusoidal",
        activation="gelu",
        bias=True,
    ),
    # decoder-only without positions, Post-LN RMSNorm
    "cfg-post-none-rms": dict(
        architecture="decoder",
        d_model=16,
        n_layers=1,
        n_heads=2,
        norm="rmsnorm",
        norm_placement="post",
        pos_encoding="none",
        activation="relu",
    ),
    # decoder-only, Pre-LN LayerNorm, learned positions, GeGLU (tanh) with biases on the FFN only (Llama mlp_bias)
    "cfg-pre-learned-geglu-mlpbias": dict(
        architecture="decoder",
        d_model=16,
        n_layers=1,
        n_heads=2,
        pos_encoding="learned",
        activation="geglu_tanh",
        bias=False,
        mlp_bias=True,
    ),
    # encoder-only, learned positions, Post-LN, ReLU, MHA
    "cfg-encoder-learned-relu": dict(
        architecture="encoder",
        d_model=24,
        n_layers=1,
        n_heads=3,
        pos_encoding="learned",
        norm_placement="post",
        activation="relu",
        final_norm=False,
        lm_head=False,
    ),
}


HF_NAME = "hf-llama-30"


def llama_30(path: Path) -> Path | None:
    """A Llama-format directory (config.json, safetensors, tokenizer.json) with random weights."""
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=300,
        hidden_size=36,
        intermediate_size=96,
        num_hidden_layers=30,
        num_attention_heads=9,
        num_key_value_heads=3,
        max_position_embeddings=64,
    )
    transformers.LlamaForCausalLM(config).eval().save_pretrained(path, safe_serialization=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tok.train_from_iterator(["the cat sat on the mat", "我爱北京天安门"] * 5, trainer)
    tok.save(str(path / "tokenizer.json"))
    return path


def teach_server_for(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A server with every model above (a module fixture of each teaching test file yields from it)."""
    srv = ServerThread(free_port(), tmp_path_factory.mktemp("teach"), extra_models=True)
    registry = srv.registry
    models = {}
    for name, kwargs in CONFIGS.items():
        tok = CharTokenizer(CHARS, specials=("<s>",))
        cfg = TransformerConfig(vocab_size=tok.vocab_size, n_ctx=64, seed=5, init_std=0.3, **kwargs)
        models[name] = LoadedModel(
            Transformer(cfg).eval(), tok, {"description": name, "bos_token": "<s>", "eos_token": "<s>"}
        )
    for name, loaded in models.items():
        registry.add(name, loaded, source="test")
    # a Hugging Face directory as a user adds one: a 30-layer Llama (RMSNorm, RoPE, SwiGLU, GQA 9/3)
    hf_dir = llama_30(tmp_path_factory.mktemp("hf-llama"))
    if hf_dir is not None:
        add_directory(registry, HF_NAME, hf_dir, source="test")
    add_minilm(registry)  # when its package is installed
    srv.torch_models = {name: loaded.model for name, loaded in models.items()}  # type: ignore[attr-defined]
    yield srv.start()
    srv.stop()


def api(server: Any, path: str, body: dict[str, Any] | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(server.url + path, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request) as response:
        return json.loads(response.read())


def torch_model(server: Any, name: str) -> Transformer:
    if name in server.torch_models:
        return server.torch_models[name]
    return server.registry.get(name).model


CHAPTER_IDS = [
    "why",
    "qkv",
    "scores",
    "scale",
    "mask",
    "softmax",
    "weighted",
    "heads",
    "ffn",
    "residual",
    "positions",
    "architectures",
    "efficiency",
    "misconceptions",
    "paris",
]
