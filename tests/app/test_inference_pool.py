"""Speed under a class: cached traces, shared in-flight work, and 503 instead of a hang."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from fastapi.testclient import TestClient

from app.errors import ApiError
from app.inference_pool import Engine
from tests.app.conftest import error_of, post


def test_stepping_through_stages_reuses_one_trace(client: TestClient) -> None:
    engine = client.app.state.service.engine  # type: ignore[attr-defined]
    before = engine.computed
    text = {"model": "gpt", "text": "step through me"}
    post(client, "/api/trace", text)
    post(client, "/api/trace", {**text, "stages": ["blocks.1.*"]})
    post(client, "/api/attention", {**text, "layer": 1})
    post(client, "/api/qkv", {**text, "layer": 0})
    post(client, "/api/activations", text)
    post(client, "/api/predict", {**text, "max_new_tokens": 0})
    assert engine.computed == before + 1


def test_identical_concurrent_requests_share_one_computation() -> None:
    engine = Engine(workers=2, queue_size=4)
    calls = []
    gate = threading.Event()

    def slow() -> int:
        calls.append(1)
        gate.wait(5)
        return 42

    async def scenario() -> list[int]:
        waiting = [asyncio.ensure_future(engine.shared("same", slow)) for _ in range(5)]
        await asyncio.sleep(0.05)
        gate.set()
        return await asyncio.gather(*waiting)

    assert asyncio.run(scenario()) == [42] * 5
    assert len(calls) == 1
    engine.shutdown()


def test_over_capacity_is_refused_not_queued() -> None:
    engine = Engine(workers=1, queue_size=1)
    gate = threading.Event()

    async def scenario() -> ApiError:
        running = [asyncio.ensure_future(engine.call(gate.wait, 5)) for _ in range(2)]  # one runs, one waits
        await asyncio.sleep(0.05)
        with pytest.raises(ApiError) as refused:
            await engine.call(time.sleep, 0)
        gate.set()
        await asyncio.gather(*running)
        return refused.value

    error = asyncio.run(scenario())
    assert (error.status, error.code, error.headers) == (503, "busy", {"Retry-After": "1"})
    engine.shutdown()


def test_busy_server_answers_503_with_retry_after(client: TestClient) -> None:
    engine = client.app.state.service.engine  # type: ignore[attr-defined]
    engine.pending = engine.capacity  # as if every worker and queue slot were taken
    try:
        response = post(client, "/api/trace", {"model": "gpt", "text": "a new text, not cached"})
    finally:
        engine.pending = 0
    assert error_of(response)[:2] == (503, "busy")
    assert response.headers["retry-after"] == "1"


def test_trace_cache_is_bounded() -> None:
    engine = Engine(workers=1, queue_size=0, cache_entries=2)
    from app.inference_pool import ForwardPass
    from model.hooks import Trace

    for i in range(4):
        engine.traces.put(i, ForwardPass([], None, None, Trace([])))  # type: ignore[arg-type]
    assert engine.traces.get(0) is None and engine.traces.get(3) is not None and len(engine.traces) == 2
    engine.shutdown()


def test_identical_requests_reuse_the_rendered_body(client: TestClient) -> None:
    engine = client.app.state.service.engine  # type: ignore[attr-defined]
    request = {"model": "gpt", "text": "a class opens the same example"}
    first = post(client, "/api/trace", request)
    bodies = len(engine.bodies)
    second = post(client, "/api/trace", request)
    assert second.content == first.content and len(engine.bodies) == bodies
    assert post(client, "/api/trace", {**request, "encoding": "base64"}).content != first.content


def test_threads_needing_the_same_trace_compute_it_once() -> None:
    from concurrent.futures import ThreadPoolExecutor

    from app.tokenizing import Inputs, encode_text
    from tests.app.conftest import make_registry

    engine = Engine(workers=1, queue_size=0)
    loaded = make_registry().get("gpt")
    inputs = Inputs(encode_text(loaded, "shared by many"))
    with ThreadPoolExecutor(8) as pool:
        runs = list(pool.map(lambda _: engine.trace_sync("gpt", loaded.model, inputs), range(16)))
    assert engine.computed == 1 and all(run is runs[0] for run in runs)
    engine.shutdown()


def test_answers_are_gzipped_once_in_the_pool_and_sent_as_the_client_accepts(client: TestClient) -> None:
    import gzip

    engine = client.app.state.service.engine  # type: ignore[attr-defined]
    request = {"model": "gpt", "text": "gzip once for a whole class"}
    zipped = client.post("/api/trace", json=request, headers={"Accept-Encoding": "gzip"})
    plain = client.post("/api/trace", json=request, headers={"Accept-Encoding": "identity"})
    assert zipped.status_code == plain.status_code == 200
    assert zipped.headers["content-encoding"] == "gzip" and "content-encoding" not in plain.headers
    assert zipped.headers["vary"] == plain.headers["vary"] == "Accept-Encoding"
    assert zipped.content == plain.content  # httpx decoded the gzip: the same JSON either way
    assert int(plain.headers["content-length"]) == len(plain.content)
    [kept] = [r for k, r in engine.bodies._items.items() if "gzip once for a whole class" in repr(k)]
    assert kept[0].gzipped is not None and gzip.decompress(kept[0].gzipped) == plain.content
    assert int(zipped.headers["content-length"]) == len(kept[0].gzipped)
    assert zipped.headers["x-content-type-options"] == "nosniff"  # the security headers still go on


def test_the_warm_up_leaves_both_inference_workers_free(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A class that starts with the server gets every worker at once: the start-up warm-up (lazy models, the
    heap, the meta device) runs in a thread of its own, and the workers answer while it is still running."""
    from app.factory import create_app
    from app.service import Service
    from tests.app.conftest import make_registry, make_settings

    started, release, ran_on = threading.Event(), threading.Event(), []

    def slow_warm_up(self: Service) -> None:
        ran_on.append(threading.current_thread().name)
        started.set()
        release.wait(timeout=30)

    monkeypatch.setattr(Service, "warm_up", slow_warm_up)
    app = create_app(make_settings(tmp_path, workers=1, queue_size=0), make_registry())
    with TestClient(app) as client:
        assert started.wait(timeout=10)
        # one worker, no queue: had the warm-up taken the worker, this would be refused with 503
        answer = post(client, "/api/trace", {"model": "gpt", "text": "while the server warms up"})
        release.set()
    assert answer.status_code == 200, answer.text
    assert ran_on and ran_on[0].startswith("warm-up"), ran_on


def test_gzip_from_isal_or_zlib_is_the_same_body(monkeypatch: pytest.MonkeyPatch) -> None:
    """ISA-L when installed, zlib otherwise (app.compression): any gzip reader gets the body back from either."""
    import gzip
    import zlib

    from app import compression

    body = b'{"stages":' + b"[0.1234,-2.5e-05]," * 3000 + b"[]}"
    backends = [zlib]
    try:
        from isal import isal_zlib

        backends.append(isal_zlib)
    except ImportError:
        pass
    for backend in backends:
        monkeypatch.setattr(compression, "DEFLATE", backend)
        zipped = compression.Rendered.of(body).gzipped
        assert zipped is not None and len(zipped) < len(body) // 10 and gzip.decompress(zipped) == body


def test_a_step_after_the_first_view_does_not_tokenize_the_text_again(client: TestClient,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    service = client.app.state.service  # type: ignore[attr-defined]
    tokenizer = service.registry.get("gpt").tokenizer
    texts: list[str] = []
    encode = tokenizer.encode
    monkeypatch.setattr(tokenizer, "encode", lambda text: texts.append(text) or encode(text))
    first = {"model": "gpt", "text": "one text, many steps"}
    views = [client.post("/api/trace", json=first),
             client.post("/api/trace", json={**first, "stages": ["blocks.0.attn.hook_pattern"], "heads": [1]}),
             client.post("/api/attention", json={**first, "layer": 1}),
             client.post("/api/tokenize", json=first)]
    assert all(v.status_code == 200 for v in views) and texts == ["one text, many steps"]
    assert views[0].json()["tokens"] == views[3].json()["tokens"]
    client.post("/api/trace", json={"model": "gpt", "text": "another text"})
    assert texts == ["one text, many steps", "another text"]
    too_long = client.post("/api/trace", json={"model": "gpt", "text": "x" * 100})  # past the tiny model's n_ctx
    assert too_long.status_code == 422
    assert not any("x" * 100 in key for key in service.tokenized._items)  # a refused text is not kept
