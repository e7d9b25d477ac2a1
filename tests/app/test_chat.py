"""`chat: true`: the text read as one user message in the model's chat template (app/chat.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.factory import create_app
from app.registry import Registry
from checkpoints import LoadedModel
from model.config import TransformerConfig
from model.tokenizer import CharTokenizer
from model.transformer import Transformer
from tests.app.conftest import make_settings, tiny_models

BOS = "<|endoftext|>"
# SmolLM2-Instruct's template (tokenizer.chat_template of its GGUF file)
CHATML = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}"
    "{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
LLAMA2 = "{{ bos_token }}{% for m in messages %}[INST] {{ m['content'] }} [/INST]{% endfor %}"


def decoder(template: str | None, specials: tuple[str, ...]) -> LoadedModel:
    tok = CharTokenizer(specials=specials)
    cfg = TransformerConfig(architecture="decoder", vocab_size=tok.vocab_size, d_model=32, n_layers=2, n_heads=4,
                            n_ctx=256, pos_encoding="rope", norm="rmsnorm", activation="swiglu", bias=False, seed=5)
    meta: dict[str, Any] = {"name": "chatty", "bos_token": specials[0], "eos_token": specials[0]}
    if template is not None:
        meta["chat_template"] = template
    return LoadedModel(Transformer(cfg).eval(), tok, meta)


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    registry = Registry(default="chatml")
    registry.add("chatml", decoder(CHATML, (BOS, "<|im_start|>", "<|im_end|>")), source="test")
    registry.add("llama2", decoder(LLAMA2, ("<s>", "[INST]", "[/INST]")), source="test")
    registry.add("evil", decoder("{{ ''.__class__.__mro__[1].__subclasses__() }}{{ messages[0].content }}",
                                 (BOS,)), source="test")
    registry.add("refuses", decoder("{{ raise_exception('only system messages') }}", (BOS,)), source="test")
    for name, loaded in tiny_models().items():  # gpt: a decoder without a template; bert: an encoder
        registry.add(name, loaded, source="test")
    settings = make_settings(tmp_path_factory.mktemp("chat"), default_model="chatml", max_tokens=200)
    with TestClient(create_app(settings, registry)) as test_client:
        yield test_client


def tokenize(client: TestClient, **body: Any) -> Any:
    return client.post("/api/tokenize", json=body)


def test_chat_wraps_the_text_in_the_template_with_special_tokens_as_tokens(client: TestClient) -> None:
    answer = tokenize(client, model="chatml", text="Hi", chat=True).json()
    texts = [t["text"] for t in answer["tokens"]]
    assert answer["chat_text"] == (
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    assert texts[0] == BOS and texts[1] == "<|im_start|>"
    assert texts.count("<|im_start|>") == 3 and texts.count("<|im_end|>") == 2
    tok = CharTokenizer(specials=(BOS, "<|im_start|>", "<|im_end|>"))
    assert {t["id"] for t in answer["tokens"] if t["text"] == "<|im_start|>"} == {tok.token_id("<|im_start|>")}
    for t in answer["tokens"][1:]:  # every span points into the rendered text (bytes show as <0x..>)
        assert answer["chat_text"][t["start"]:t["end"]] == t["text"] or t["text"].startswith("<0x")
    plain = tokenize(client, model="chatml", text="Hi").json()
    assert [t["text"] for t in plain["tokens"]] == [BOS, "H", "i"] and plain.get("chat_text") is None


def test_special_looking_text_the_user_types_stays_plain_text(client: TestClient) -> None:
    answer = tokenize(client, model="chatml", text="<|im_end|>", chat=True).json()
    texts = [t["text"] for t in answer["tokens"]]
    assert texts.count("<|im_end|>") == 2  # the template's two, not the user's
    assert "|" in texts


def test_a_template_that_writes_the_start_token_does_not_get_a_second_one(client: TestClient) -> None:
    texts = [t["text"] for t in tokenize(client, model="llama2", text="ok", chat=True).json()["tokens"]]
    assert texts == ["<s>", "[INST]", " ", "o", "k", " ", "[/INST]"]


def test_trace_and_predict_read_the_chat_text(client: TestClient) -> None:
    plain = client.post("/api/trace", json={"model": "chatml", "text": "Hi", "top_k": 3}).json()
    chat = client.post("/api/trace", json={"model": "chatml", "text": "Hi", "top_k": 3, "chat": True}).json()
    assert len(chat["tokens"]) > len(plain["tokens"])
    assert chat["stages"]["hook_tokens"]["shape"] == [len(chat["tokens"])]
    assert chat["top_tokens"] != plain["top_tokens"]
    predicted = client.post("/api/predict", json={"model": "chatml", "text": "Hi", "chat": True, "seed": 0,
                                                  "max_new_tokens": 2})
    assert predicted.status_code == 200, predicted.text


@pytest.mark.parametrize("model", ["gpt", "bert"])
def test_a_model_without_a_chat_template_refuses_the_option_naming_it(client: TestClient, model: str) -> None:
    for path in ("/api/tokenize", "/api/trace", "/api/predict")[: 3 if model == "gpt" else 2]:  # bert: no predict
        response = client.post(path, json={"model": model, "text": "Hi", "chat": True})
        assert response.status_code == 422, (path, response.text)
        error = response.json()["error"]
        assert error["code"] == "invalid_option" and "`chat`" in error["message"]


@pytest.mark.parametrize(("model", "words"), [("evil", "cannot be rendered"), ("refuses", "only system messages")])
def test_a_template_that_fails_is_a_422_not_a_500(client: TestClient, model: str, words: str) -> None:
    response = tokenize(client, model=model, text="Hi", chat=True)
    assert response.status_code == 422, response.text
    assert words in response.json()["error"]["message"]


def test_chat_is_a_strict_boolean(client: TestClient) -> None:
    assert tokenize(client, model="chatml", text="Hi", chat=1).status_code == 422
