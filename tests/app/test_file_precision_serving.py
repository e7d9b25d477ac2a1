"""A model kept in its file's precision answers every request as the float32 one does; a model that is still
loading is a 503 with how far it is, and the server keeps answering meanwhile."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from app.factory import create_app
from app.registry import Registry
from checkpoints import LoadedModel, build_model
from checkpoints.file_precision import current_policy, in_file_precision
from model.stored_weights import StoredWeight
from model.transformer import distinct_state_dict
from tests.app.conftest import make_settings, tiny_models
from tests.app.record_answers import REQUESTS, differences, without_timings


def half_rounded_pair() -> tuple[LoadedModel, LoadedModel]:
    """The tiny decoder with its matrices rounded to float16: held as float32 (eager) and as float16 (stored)."""
    gpt = tiny_models()["gpt"]
    state = {name: t.detach().half() if t.dim() == 2 else t.detach() for name, t in
             distinct_state_dict(gpt.model).items()}
    eager = build_model(gpt.model.cfg, {name: t.float() for name, t in state.items()})
    stored = build_model(gpt.model.cfg, in_file_precision(state))
    assert any(isinstance(p, StoredWeight) for p in stored.parameters())
    return LoadedModel(eager, gpt.tokenizer, dict(gpt.meta)), LoadedModel(stored, gpt.tokenizer, dict(gpt.meta))


# the experiments that read weights directly (W_U[t], W_O, every matrix re-quantized), beside the recorded requests
WEIGHT_READERS = [
    ("POST", "/api/lab/logit-attribution", {"model": "gpt", "text": "the cat sat on the"}),
    ("POST", "/api/lab/quantization", {"model": "gpt", "text": "the cat sat on the mat", "requantize": "Q4_0",
                                       "top": 4}),
    ("POST", "/api/lab/steering", {"model": "gpt", "text": "the cat", "a": ["le chat noir"], "b": ["the black cat"],
                                   "layer": 1, "alpha": 4.0, "max_new_tokens": 4}),
    ("POST", "/api/lab/activation-patching", {"model": "gpt", "text": "the cat sat", "corrupted": "the bat sat"}),
    ("GET", "/api/models/gpt", {}),
]


def test_every_recorded_request_on_the_decoder_answers_the_same_from_stored_weights(tmp_path: Path) -> None:
    eager, stored = half_rounded_pair()
    registry = Registry(default="eager")
    registry.add("eager", eager, source="test")
    registry.add("stored", stored, source="test")
    asked = 0
    with TestClient(create_app(make_settings(tmp_path, default_model="eager"), registry)) as client:
        for method, path, body in [*REQUESTS, *WEIGHT_READERS]:
            if body.get("model") != "gpt" and path != "/api/models/gpt":
                continue
            answers = []
            for name in ("eager", "stored"):
                response = (client.post(path, json={**body, "model": name}) if method == "POST" else
                            client.get(path.replace("gpt", name)))
                answer = without_timings(response.json())
                if method == "GET":
                    answer.pop("default")  # which of the two is the server's default
                named = json.dumps(answer).replace(f'"{name}"', '"the model"')
                answers.append((response.status_code, json.loads(named)))
            (status_a, a), (status_b, b) = answers
            assert status_a == status_b, (path, body)
            differ = [d for d in differences(a, b, f"{path} {body}") if ".seconds:" not in d]  # measured time
            assert not differ, differ[:3]
            asked += 1
    assert asked >= 34  # trace, attention, qkv, predict, model info and the lab experiments


def test_a_model_still_loading_is_a_503_with_its_progress(tmp_path: Path) -> None:
    release = threading.Event()
    started = threading.Event()

    def slow_load() -> LoadedModel:
        current_policy().report(3, 10)  # what a loader reports after its third tensor of ten
        started.set()
        release.wait(30)
        return tiny_models()["gpt"]

    registry = Registry(default="gpt")
    registry.add("gpt", tiny_models()["gpt"], source="test")
    registry.add("big", loader=slow_load, source="test", large=True)
    settings = make_settings(tmp_path, load_wait_s=0.2)
    try:
        with TestClient(create_app(settings, registry)) as client:
            assert started.wait(10)  # the warm-up started it in the background
            response = client.post("/api/trace", json={"model": "big", "text": "the cat"})
            assert response.status_code == 503 and response.headers["Retry-After"]
            error: dict[str, Any] = response.json()["error"]
            assert error["code"] == "model_loading" and error["percent"] == 30 and "30 %" in error["message"]
            info = client.get("/api/models/big")
            assert info.status_code == 503 and info.json()["error"]["percent"] == 30
            began = time.perf_counter()
            health = client.get("/api/health").json()
            assert time.perf_counter() - began < 1.0  # the server keeps answering while it loads
            assert health["loading"] == [{"name": "big", "done": 3, "total": 10, "percent": 30}]
            assert [m["name"] for m in client.get("/api/models").json()] == ["gpt"]  # the others are listed
            release.set()
            for _ in range(100):
                if "loading" not in client.get("/api/health").json():
                    break
                time.sleep(0.05)
            assert client.post("/api/trace", json={"model": "big", "text": "the cat"}).status_code == 200
            assert "loading" not in client.get("/api/health").json()
    finally:
        release.set()


def test_the_float32_budget_decides_the_precision_a_store_model_keeps(tmp_path: Path) -> None:
    from tests.checkpoints.gguf_files import gguf, tiny_hf, write_gguf

    path = tmp_path / "tiny.gguf"
    write_gguf(path, tiny_hf("llama"), "llama", gguf.GGMLQuantizationType.Q8_0)
    answers = []
    for budget_mb, kept in ((0, True), (3072, False)):
        settings = make_settings(tmp_path, add_models=[f"tiny={path}"], float32_budget_mb=budget_mb)
        with TestClient(create_app(settings)) as client:
            info = client.get("/api/models/tiny").json()
            assert ("weights_in_memory" in info["meta"]) == kept
            body = {"model": "tiny", "text": "the cat", "stages": ["hook_logits"]}
            answers.append(client.post("/api/trace", json=body).json())
    assert not differences(answers[0], answers[1])
