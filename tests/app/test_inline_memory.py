"""From-scratch models (and training snapshots) under a byte budget, counted while any request holds them.

A cache's bounds alone freed no model that a request still held: a burst of distinct configs, each
request waiting in the engine's queue with its freshly built model, once held ~34 models of 100 MB.
"""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import textwrap
import threading
import time
import weakref
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from safetensors.torch import save_file

import app.resolve as resolve
from app import process_tuning
from app.catalogue import add_directory
from app.errors import ApiError
from app.factory import create_app
from app.inference_pool import Engine
from app.registry import Registry
from app.resolve import ModelResolver
from app.schemas import InlineConfig
from checkpoints import save_checkpoint
from model.config import TransformerConfig
from model.tokenizer import CharTokenizer
from model.transformer import Transformer
from tests.app.conftest import make_registry, make_settings

ROOT = Path(__file__).resolve().parents[2]
BUDGET_MB = 1
SMALL = {"d_model": 64, "n_layers": 2, "n_heads": 2, "d_mlp": 256}  # 116,480 parameters: 0.44 MB, two fit in 1 MB


def small(seed: int) -> InlineConfig:
    return InlineConfig(**SMALL, seed=seed)


def run(scenario: Any) -> Any:
    """asyncio.run in a thread of its own: a loop of its own, whatever else this process runs."""
    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, scenario).result()


# ---------------------------------------------------------------- through the app: a burst of distinct configs


class CountedTransformer(Transformer):
    """A Transformer that the test can count while it is alive (meta-device ones, for parameter counts, aside)."""

    alive: weakref.WeakSet[Transformer] = weakref.WeakSet()

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__(cfg)
        CountedTransformer.alive.add(self)

    @classmethod
    def with_weights(cls) -> int:
        return sum(1 for model in list(cls.alive) if model.device.type != "meta")


def test_a_burst_of_distinct_configs_never_holds_more_models_than_the_budget(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resolve, "Transformer", CountedTransformer)
    settings = make_settings(tmp_path, inline_cache_mb=BUDGET_MB, queue_size=32, prefault_mb=0)
    app = create_app(settings, make_registry())
    most_alive = 0

    def slow_trace(trace_sync: Any) -> Any:
        def traced(*args: Any) -> Any:  # each request counts the live models when its turn in the pool comes
            nonlocal most_alive
            most_alive = max(most_alive, CountedTransformer.with_weights())
            time.sleep(0.02)  # the queue builds up behind it, as under a class
            return trace_sync(*args)
        return traced

    async def burst() -> list[httpx.Response]:
        async with app.router.lifespan_context(app):
            engine = app.state.service.engine
            monkeypatch.setattr(engine, "trace_sync", slow_trace(engine.trace_sync))
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=60) as client:
                bodies = [{"config": {**SMALL, "seed": seed}, "text": "hello", "stages": ["*"]} for seed in range(12)]
                answers = await asyncio.gather(*(client.post("/api/trace", json=body) for body in bodies))
                again = await client.post("/api/trace", json={"config": {**SMALL, "seed": 99}, "text": "hi"})
                return [*answers, again]

    *answers, again = run(burst())
    assert most_alive <= 2, most_alive  # 2 x 0.44 MB fit in 1 MB; a third waits for a request to end
    refused = [a for a in answers if a.status_code == 503]
    assert refused and len(refused) + sum(a.status_code == 200 for a in answers) == len(answers)
    for answer in refused:
        body = answer.json()
        assert body["error"]["code"] == "busy" and "from-scratch models" in body["error"]["message"]
        assert answer.headers["retry-after"] == "1"
    assert again.status_code == 200  # the burst is over: its models are gone, a new one fits
    gc.collect()
    assert CountedTransformer.with_weights() <= 2


# ---------------------------------------------------------------- the resolver, step by step


@pytest.fixture
def resolver(tmp_path: Path) -> Iterator[ModelResolver]:
    engine = Engine(workers=1, queue_size=4)
    yield ModelResolver(Registry(), engine, make_settings(tmp_path, inline_cache_mb=BUDGET_MB))
    engine.shutdown()


def test_a_model_a_request_still_holds_counts_until_it_is_gone(resolver: ModelResolver) -> None:
    async def scenario() -> None:
        held = [await resolver.inline(small(0)), await resolver.inline(small(1))]
        with pytest.raises(ApiError) as refused:  # the cache drops both, but the requests hold them
            await resolver.inline(small(2))
        assert (refused.value.status, refused.value.code, refused.value.headers) == (503, "busy", {"Retry-After": "1"})
        assert "from-scratch models" in refused.value.message
        assert resolver.inline_live.held()[0] == 2 and len(resolver.inline_models) == 0
        held.clear()  # the requests end
        assert resolver.inline_live.held() == (0, 0)
        await resolver.inline(small(2))
        assert resolver.inline_live.held()[0] == 1

    run(scenario())


def test_a_cached_model_no_request_holds_makes_room_for_a_new_one(resolver: ModelResolver) -> None:
    async def scenario() -> None:
        for seed in range(3):
            await resolver.inline(small(seed))
        count, nbytes = resolver.inline_live.held()
        assert count == len(resolver.inline_models) == 2  # the oldest was dropped, and so freed
        assert nbytes == resolver.inline_models.nbytes <= BUDGET_MB << 20
        assert (await resolver.inline(small(2))).loaded is (await resolver.inline(small(2))).loaded  # cached

    run(scenario())


def test_one_model_over_the_budget_alone_is_still_served(resolver: ModelResolver) -> None:
    async def scenario() -> None:
        big = InlineConfig(d_model=128, n_layers=2, n_heads=2, d_mlp=512)  # 1.64 MB against 1 MB
        held = await resolver.inline(big)
        assert resolver.inline_live.held()[0] == 1
        with pytest.raises(ApiError):
            await resolver.inline(small(0))
        del held

    run(scenario())


def test_training_snapshots_count_against_their_budget_too(tmp_path: Path) -> None:
    cfg = TransformerConfig(d_model=96, n_layers=2, n_heads=2, d_mlp=384, vocab_size=256, n_ctx=64, seed=1)  # 0.9 MB
    directory = tmp_path / "learner"
    steps = (10, 20)
    files = {step: f"snapshots/step-{step:06d}.safetensors" for step in steps}
    save_checkpoint(directory, Transformer(cfg), CharTokenizer(),
                    {"snapshots": [{"step": step, "file": files[step]} for step in steps]})
    (directory / "snapshots").mkdir()
    for step in steps:
        state = Transformer(cfg.replace(seed=step)).state_dict()
        state = {k: v.contiguous() for k, v in state.items() if k != "W_U.weight"}  # tied, stored once
        save_file(state, str(directory / files[step]))
    registry = Registry(default="learner")
    add_directory(registry, "learner", directory)
    engine = Engine(workers=1, queue_size=4)
    resolver = ModelResolver(registry, engine, make_settings(tmp_path, inline_cache_mb=BUDGET_MB))

    async def scenario() -> None:
        held = await resolver.snapshot("learner", 10)
        with pytest.raises(ApiError) as refused:
            await resolver.snapshot("learner", 20)
        assert refused.value.status == 503 and "training snapshots" in refused.value.message
        del held
        assert resolver.snapshot_live.held() == (0, 0)
        assert (await resolver.snapshot("learner", 20)).key == "learner@20"

    try:
        run(scenario())
    finally:
        engine.shutdown()


# ---------------------------------------------------------------- giving freed memory back


def test_a_model_that_goes_releases_its_bytes_and_trims_the_heap_past_a_threshold(
        monkeypatch: pytest.MonkeyPatch) -> None:
    trimmed = threading.Event()
    monkeypatch.setattr(process_tuning, "release_freed_memory", trimmed.set)
    live = resolve.LiveModels(max_bytes=1 << 20)
    config = TransformerConfig(d_model=8, n_layers=1, n_heads=1, vocab_size=8, n_ctx=8)

    def build_and_drop(nbytes: int) -> None:
        assert live.reserve(nbytes)
        live.track(Transformer(config), nbytes)  # dropped at once, as a request's model is when it ends

    build_and_drop(1_000)
    assert live.held() == (0, 0) and not trimmed.wait(0.2)  # a tiny model: no trim
    build_and_drop(resolve.TRIM_AFTER_BYTES)
    assert trimmed.wait(5)


RELEASE_PROBE = textwrap.dedent(
    """
    import torch
    from app import process_tuning
    def rss_mb(): return int(open('/proc/self/statm').read().split()[1]) * 4096 >> 20
    process_tuning.keep_freed_memory(keep_mb=256)
    weights = [torch.ones(256 * 256) for _ in range(400)]  # 100 MB of 256 KB tensors: heap, not mmap
    pin = torch.ones(1000)  # a live chunk above them: the freed space is inside the heap, not at its top
    del weights
    before = rss_mb()
    released = process_tuning.release_freed_memory()
    print(released, before - rss_mb())
    """
)


def test_release_freed_memory_answers_a_bool_and_gives_pages_back() -> None:
    assert isinstance(process_tuning.release_freed_memory(), bool)
    if not sys.platform.startswith("linux"):
        return
    out = subprocess.run([sys.executable, "-c", RELEASE_PROBE], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, check=True)
    released, given_back_mb = out.stdout.split()
    assert released == "True" and int(given_back_mb) > 80, out.stdout
