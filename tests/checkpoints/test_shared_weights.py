"""A shared tensor (the tied unembedding, the decoder's embedding) is counted, saved and optimized once."""

from __future__ import annotations

from pathlib import Path

from safetensors.torch import load_file

from checkpoints import WEIGHTS_FILE, load_checkpoint, save_checkpoint
from model import Transformer, TransformerConfig
from model.tokenizer import CharTokenizer
from model.transformer import distinct_parameters, distinct_state_dict, shared_weight_aliases


def test_tied_unembedding_is_an_alias_of_the_embedding() -> None:
    tied = Transformer(TransformerConfig(tied_embeddings=True))
    assert shared_weight_aliases(tied) == {"W_U.weight": "stack.embed.W_E.weight"}
    assert "W_U.weight" not in distinct_state_dict(tied)
    assert shared_weight_aliases(Transformer(TransformerConfig(tied_embeddings=False))) == {}


def test_encoder_decoder_shares_one_embedding() -> None:
    model = Transformer(TransformerConfig(architecture="encoder-decoder", tied_embeddings=True))
    assert shared_weight_aliases(model) == {
        "decoder.embed.W_E.weight": "encoder.embed.W_E.weight",
        "W_U.weight": "encoder.embed.W_E.weight",
    }


def test_counting_and_optimizing_see_each_tensor_once() -> None:
    model = Transformer(TransformerConfig(tied_embeddings=True))
    distinct = distinct_parameters(model)
    assert [p for _, p in distinct] == list(model.parameters())
    assert model.parameter_counts()["total"] == sum(p.numel() for _, p in distinct)
    assert model.parameter_counts()["unembedding"] == 0  # counted with the embedding


def test_a_tied_checkpoint_stores_the_embedding_once_and_loads(tmp_path: Path) -> None:
    model = Transformer(TransformerConfig(architecture="encoder-decoder", vocab_size=300, tied_embeddings=True))
    save_checkpoint(tmp_path, model, CharTokenizer("ab"))
    stored = load_file(str(tmp_path / WEIGHTS_FILE))
    assert set(stored) == set(distinct_state_dict(model))
    loaded = load_checkpoint(tmp_path).model
    assert loaded.W_U.weight is loaded.encoder.embed.W_E.weight
    assert loaded.decoder.embed.W_E.weight is loaded.encoder.embed.W_E.weight
