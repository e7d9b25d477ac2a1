"""Issue 40, failure 6: a template that writes the message 6,000 times rendered 54,000 characters in 0.1 s (under
every template limit), and each chat request then tokenized 3 million characters before its 422, which spoke of
"the text". Now the template's output is bounded by 2 x the message + 16,000 characters before anything is
tokenized, the tokenizing runs in the bounded inference pool, and the 422 speaks of the template's output."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app import chat
from app.factory import create_app
from app.registry import Registry
from tests.app.conftest import make_settings
from tests.app.test_chat import BOS, CHATML, decoder

AMPLIFIER = "{% for i in range(6000) %}{{ messages[0]['content'] }}{% endfor %}"
TWICE = "{{ messages[0]['content'] }}|{{ messages[0]['content'] }}"


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    registry = Registry(default="chatml")
    registry.add("chatml", decoder(CHATML, (BOS, "<|im_start|>", "<|im_end|>")), source="test")
    registry.add("amplifier", decoder(AMPLIFIER, (BOS,)), source="test")
    registry.add("twice", decoder(TWICE, (BOS,)), source="test")
    settings = make_settings(tmp_path_factory.mktemp("chat"), default_model="chatml", max_tokens=200, max_chars=512)
    with TestClient(create_app(settings, registry)) as test_client:
        yield test_client


def tokenize(client: TestClient, **body: Any) -> Any:
    return client.post("/api/tokenize", json=body)


def test_an_amplifying_template_is_refused_before_tokenizing(client: TestClient,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    tokenized: list[int] = []
    original = chat.pieces

    def counting(*args: Any) -> Any:
        out = original(*args)
        tokenized.append(sum(len(piece.text) for piece in out))
        return out

    monkeypatch.setattr(chat, "pieces", counting)
    tokenize(client, model="amplifier", text="warm", chat=True)  # the template renders once, then is remembered
    text = "x" * 512
    with ThreadPoolExecutor(6) as pool:
        started = time.perf_counter()
        answers = list(pool.map(lambda _: tokenize(client, model="amplifier", text=text, chat=True), range(6)))
        took = time.perf_counter() - started
        health = time.perf_counter()
        assert client.get("/api/health").status_code == 200 and time.perf_counter() - health < 1
    assert took < 5
    for answer in answers:
        assert answer.status_code == 422, answer.text
        message = answer.json()["error"]["message"]
        assert "chat template's output for this message would be 3,072,000 characters" in message, message
        assert "writes the message 6,000 times" in message and "2 x the message + 16,000" in message
    assert tokenized == []  # nothing was tokenized, or even joined


def test_a_template_within_the_bound_is_served_and_a_long_output_speaks_of_the_template(client: TestClient) -> None:
    answer = tokenize(client, model="twice", text="hello", chat=True)
    assert answer.status_code == 200, answer.text
    assert answer.json()["chat_text"] == "hello|hello"
    long = tokenize(client, model="twice", text="y" * 150, chat=True)  # 301 characters: 302 tokens with BOS
    assert long.status_code == 422
    message = long.json()["error"]["message"]
    assert message.startswith("The text as the chat template writes it is 302 tokens long; the limit is 200"), message


def test_chat_tokenizing_runs_in_the_inference_pool(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from app import tokenizing

    threads: list[str] = []
    original = tokenizing.encode_chat

    def where(*args: Any) -> Any:
        threads.append(threading.current_thread().name)
        return original(*args)

    monkeypatch.setattr(tokenizing, "encode_chat", where)
    assert tokenize(client, model="chatml", text="which thread?", chat=True).status_code == 200
    assert threads and threads[0].startswith("inference")
