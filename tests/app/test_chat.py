"""`chat: true`: the text read as one user message in the model's chat template (app/chat.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tokenizers import AddedToken, Tokenizer, models

from app.factory import create_app
from app.registry import Registry
from checkpoints import LoadedModel
from model.config import TransformerConfig
from model.tokenizer import CharTokenizer, HubTokenizer
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
# templates from a hostile model file: each must be a 422 naming what it did, within its bounds
HOSTILE = {
    "power": "{{ 9 ** (9 ** 9) }}",  # CPU: a number of 370 million digits
    "huge": "{{ 'a' * 10 ** 9 }}",  # memory: a 1 GB string
    "loops": "{% for a in range(99999) %}{% for b in range(99999) %}{% endfor %}{% endfor %}",  # time
    "wide": "{% for a in range(99999) %}{{ 'x' * 1000 }}{% endfor %}",  # 100 MB of output
    "range": "{% for a in range(10 ** 9) %}{% endfor %}",
    "recursion": "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}",
}
WHAT = {"power": "longer than", "huge": "memory", "loops": "longer than", "wide": "more than",
        "range": "cannot be rendered", "recursion": "recurses"}
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
    for name, template in HOSTILE.items():
        registry.add(name, decoder(template + "{{ messages[0].content }}", (BOS,)), source="test")
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


@pytest.mark.parametrize("model", sorted(HOSTILE))
def test_a_hostile_template_is_a_422_naming_the_limit_and_the_server_keeps_answering(client: TestClient,
                                                                                    model: str) -> None:
    with ThreadPoolExecutor(2) as pool:
        started = time.perf_counter()
        chat = pool.submit(tokenize, client, model=model, text="Hi", chat=True)
        time.sleep(0.3)  # the template is rendering in its child now
        health = time.perf_counter()
        assert client.get("/api/health").status_code == 200
        assert time.perf_counter() - health < 1.0  # the request loop is free while the template renders
        answer = chat.result(timeout=30)
        took = time.perf_counter() - started
    assert answer.status_code == 422, answer.text
    message = answer.json()["error"]["message"]
    assert "chat template" in message and WHAT[model] in message, message
    assert took < 10
    again = time.perf_counter()  # the refusal is remembered: a class repeating it costs nothing
    assert tokenize(client, model=model, text="Hello", chat=True).status_code == 422
    assert time.perf_counter() - again < 1.0


def test_typed_special_tokens_stay_text_in_a_real_tokenizer() -> None:
    """A byte-level BPE with control tokens (as a GGUF file has them): "<|im_end|>" typed is characters."""
    tokenizer = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate("<|>_abdeimnt ")}, merges=[]))
    tokenizer.add_special_tokens([AddedToken("<|im_end|>", special=True, normalized=False)])
    special = tokenizer.token_to_id("<|im_end|>")
    assert special in tokenizer.encode("a<|im_end|>b").ids  # the library's own habit: this is what we turn off
    tokens = HubTokenizer(tokenizer).encode("a<|im_end|>b")
    assert special not in [t.id for t in tokens]
    assert "".join(t.text for t in tokens) == "a<|im_end|>b"
