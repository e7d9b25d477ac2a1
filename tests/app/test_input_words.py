"""Issue 41, item 4: the page is told what happened to the input, with the values to word it in any language.

- a token typed without its leading space ("paris" after "... is", where the next word's token is " paris") is
  refused with the suggestion, in the one shared check (app.tokenizing.one_token) of every typed token;
- a token that is several tokens names its pieces in `error.details`;
- a text over the character limit is refused whole (never cut), its length and the limit in `details`;
- a number over its bound names the API field and the limit, for the page to show by its on-screen label.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from app.factory import create_app
from checkpoints import LoadedModel
from model.config import TransformerConfig
from model.tokenizer import HubTokenizer
from model.transformer import Transformer
from tests.app.conftest import BOS, error_of, make_registry, make_settings, post

SENTENCE = "the capital of france is"
ATTRIBUTION = "/api/lab/logit-attribution"
PATCHING = "/api/lab/activation-patching"


def bpe_decoder() -> LoadedModel:
    """A tiny decoder whose byte-level BPE has both "paris" and " paris" as one token each (as SmolLM2 does)."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False, special_tokens=[BOS])
    tok.train_from_iterator(["the capital of france is paris", "paris is the capital of france",
                             "rome is the capital of italy", "the capital of italy is rome"] * 5, trainer)
    words = HubTokenizer(tok, "bpe")
    cfg = TransformerConfig(architecture="decoder", vocab_size=words.vocab_size, d_model=32, n_layers=2, n_heads=4,
                            n_ctx=64, pos_encoding="rope", norm="rmsnorm", activation="swiglu", bias=False, seed=4)
    return LoadedModel(Transformer(cfg).eval(), words, {"description": "tiny bpe decoder", "bos_token": BOS,
                                                         "eos_token": BOS, "head_labels": {}})


@pytest.fixture(scope="module")
def bpe_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    registry = make_registry()
    registry.add("bpe", bpe_decoder(), source="test")
    with TestClient(create_app(make_settings(Path(tmp_path_factory.mktemp("words"))), registry)) as client:
        yield client


def details_of(response) -> dict[str, object]:  # noqa: ANN001
    error_of(response)
    return response.json()["error"]["details"]


def test_a_target_without_its_leading_space_is_refused_with_the_suggestion(bpe_client: TestClient) -> None:
    for field in ("target", "versus"):
        body: dict[str, object] = {"model": "bpe", "text": SENTENCE, "target": " rome", field: "paris"}
        response = post(bpe_client, ATTRIBUTION, body)
        status, code, message = error_of(response)
        assert (status, code) == (422, "invalid_option") and "“ paris”" in message, message
        assert details_of(response) == {"reason": "missing_space", "field": field, "text": "paris",
                                        "suggestion": " paris"}
    ok = post(bpe_client, ATTRIBUTION, {"model": "bpe", "text": SENTENCE, "target": " paris"})
    assert ok.status_code == 200 and ok.json()["target"]["text"] == " paris"
    # after a space the word has none: "paris" is then the token asked for
    spaced = post(bpe_client, ATTRIBUTION, {"model": "bpe", "text": SENTENCE + " ", "target": "paris"})
    assert spaced.status_code == 200 and spaced.json()["target"]["text"] == "paris"


def test_patching_answers_go_through_the_same_check(bpe_client: TestClient) -> None:
    body = {"model": "bpe", "text": SENTENCE, "corrupted": "the capital of italy is", "grid": "residual",
            "knockout": False}
    response = post(bpe_client, PATCHING, {**body, "clean_answer": "paris"})
    assert details_of(response) == {"reason": "missing_space", "field": "clean_answer", "text": "paris",
                                    "suggestion": " paris"}
    response = post(bpe_client, PATCHING, {**body, "corrupted_answer": "berlin"})
    assert details_of(response) == {"reason": "not_one_token", "field": "corrupted_answer", "text": "berlin",
                                    "count": 6, "pieces": [{"text": c, "start": i, "end": i + 1}
                                                           for i, c in enumerate("berlin")]}
    longer = post(bpe_client, PATCHING, {**body, "corrupted": "the capital of italy is not"})
    assert details_of(longer) == {"reason": "token_counts_differ", "clean": 6, "corrupted": 10}


def test_a_token_of_several_pieces_names_them(client: TestClient) -> None:
    response = post(client, ATTRIBUTION, {"model": "gpt", "text": "the cat sat on the", "target": "cat"})
    assert details_of(response) == {"reason": "not_one_token", "field": "target", "text": "cat", "count": 3,
                                    "pieces": [{"text": c, "start": i, "end": i + 1} for i, c in enumerate("cat")]}


def test_a_long_text_is_refused_whole_with_its_length_and_the_limit(client: TestClient) -> None:
    text = "the cat sat on the mat. " * 84  # 2,016 characters: the limit is 512 (Settings.max_chars)
    for path in ("/api/trace", ATTRIBUTION):
        response = post(client, path, {"model": "gpt", "text": text})
        status, code, message = error_of(response)
        assert (status, code) == (422, "text_too_long") and "512" in message and "2,016" in message
        assert details_of(response) == {"reason": "too_many_chars", "field": "text", "limit": 512, "length": 2016}


def test_a_number_over_its_bound_names_the_field_and_the_limit(client: TestClient) -> None:
    response = post(client, "/api/lab/generation-tree", {"model": "gpt", "text": "the cat", "max_new_tokens": 40})
    assert details_of(response) == {"reason": "too_large", "field": "max_new_tokens", "limit": 32}
    response = post(client, "/api/lab/generation-tree", {"model": "gpt", "text": "the cat", "max_new_tokens": 0})
    assert details_of(response) == {"reason": "too_small", "field": "max_new_tokens", "limit": 1}
    # a key the client made up is never named back
    response = post(client, "/api/lab/generation-tree", {"model": "gpt", "text": "the cat", "made_up": 1})
    assert "details" not in response.json()["error"]


def test_a_number_past_the_model_names_what_and_how_many(client: TestClient) -> None:
    response = post(client, ATTRIBUTION, {"model": "gpt", "text": "the cat", "position": 40})
    assert details_of(response) == {"reason": "out_of_range", "what": "position", "value": 40, "count": 8,
                                    "last": 7}


def test_the_same_token_twice_is_named_by_its_field(client: TestClient) -> None:
    response = post(client, ATTRIBUTION, {"model": "gpt", "text": "the cat", "target": "t", "versus": "t"})
    assert details_of(response) == {"reason": "same_token", "field": "versus"}
